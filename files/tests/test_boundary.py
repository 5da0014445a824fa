"""The boundary: resolution (~, relative, .., symlinks) happens before the check; an empty
boundary releases nothing; a refusal is ``abgelehnt`` with a named step."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from files import boundary


@pytest.fixture
def rand(tmp_path: Path, settings: Any) -> Path:
    inside = tmp_path / "rand"
    (inside / "notizen").mkdir(parents=True)
    (tmp_path / "draussen").mkdir()
    settings.FILES_BOUNDARY = [str(inside)]
    settings.FILES_BASE_DIR = inside
    return inside


def test_relative_path_resolves_against_the_base_dir(rand: Path) -> None:
    result = boundary.check("notizen")
    assert result.ok and result.resolved == str(rand / "notizen")


def test_tilde_is_expanded_before_the_check(rand: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(rand))
    assert boundary.check("~/notizen").resolved == str(rand / "notizen")


def test_dot_dot_leading_out_is_refused_on_the_resolved_path(rand: Path) -> None:
    result = boundary.check(str(rand / "notizen" / ".." / ".." / "draussen"))
    assert not result.ok
    assert result.status == "abgelehnt" and result.step == "ausserhalb_aussenrand"
    assert result.resolved == str(rand.parent / "draussen")  # the resolved path is shown
    assert "außerhalb des Außenrands" in result.reason


def test_symlink_inside_pointing_out_is_refused(rand: Path) -> None:
    os.symlink(rand.parent / "draussen", rand / "tuer")
    result = boundary.check(str(rand / "tuer"))
    assert not result.ok and result.step == "ausserhalb_aussenrand"
    assert result.resolved == str(rand.parent / "draussen")


def test_symlink_outside_pointing_in_is_allowed_as_its_target(rand: Path) -> None:
    os.symlink(rand / "notizen", rand.parent / "abkuerzung")
    result = boundary.check(str(rand.parent / "abkuerzung"))
    assert result.ok and result.resolved == str(rand / "notizen")


def test_empty_boundary_fails_closed(rand: Path, settings: Any) -> None:
    settings.FILES_BOUNDARY = []
    result = boundary.check(str(rand / "notizen"))
    assert not result.ok and result.status == "abgelehnt" and result.step == "kein_aussenrand"
    assert "kein Außenrand konfiguriert" in result.reason


def test_prefix_sibling_is_not_inside(rand: Path) -> None:
    (rand.parent / "rand-nachbar").mkdir()
    assert boundary.check(str(rand.parent / "rand-nachbar")).step == "ausserhalb_aussenrand"


@pytest.mark.parametrize(
    ("raw", "step"),
    [
        pytest.param("gibtsnicht", "nicht_gefunden", id="missing"),
        pytest.param("", "kein_pfad", id="empty"),
        pytest.param("datei.md", "kein_verzeichnis", id="file"),
        pytest.param(".versteckt", "verborgen", id="hidden"),
    ],
)
def test_other_refusals_are_named(rand: Path, raw: str, step: str) -> None:
    (rand / "datei.md").write_text("x")
    (rand / ".versteckt").mkdir()
    result = boundary.check(raw)
    assert not result.ok and result.step == step and result.reason
