"""The boundary: resolution (~, relative, .., symlinks) happens before the check; an empty
boundary releases nothing; a refusal is ``abgelehnt`` with a named step."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

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
    result = boundary.check("notizen", user=None)
    assert result.ok and result.resolved == str(rand / "notizen")


def test_tilde_is_expanded_before_the_check(rand: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(rand))
    assert boundary.check("~/notizen", user=None).resolved == str(rand / "notizen")


def test_dot_dot_leading_out_is_refused_on_the_resolved_path(rand: Path) -> None:
    result = boundary.check(str(rand / "notizen" / ".." / ".." / "draussen"), user=None)
    assert not result.ok
    assert result.status == "abgelehnt" and result.step == "ausserhalb_aussenrand"
    assert result.resolved == str(rand.parent / "draussen")  # the resolved path is shown
    assert "außerhalb des erlaubten Bereichs" in result.reason


def test_symlink_inside_pointing_out_is_refused(rand: Path) -> None:
    os.symlink(rand.parent / "draussen", rand / "tuer")
    result = boundary.check(str(rand / "tuer"), user=None)
    assert not result.ok and result.step == "ausserhalb_aussenrand"
    assert result.resolved == str(rand.parent / "draussen")


def test_symlink_outside_pointing_in_is_allowed_as_its_target(rand: Path) -> None:
    os.symlink(rand / "notizen", rand.parent / "abkuerzung")
    result = boundary.check(str(rand.parent / "abkuerzung"), user=None)
    assert result.ok and result.resolved == str(rand / "notizen")


def test_empty_boundary_fails_closed(rand: Path, settings: Any) -> None:
    settings.FILES_BOUNDARY = []
    result = boundary.check(str(rand / "notizen"), user=None)
    assert not result.ok and result.status == "abgelehnt" and result.step == "kein_aussenrand"
    assert "kein erlaubter Bereich für Ordner eingerichtet" in result.reason


def test_prefix_sibling_is_not_inside(rand: Path) -> None:
    (rand.parent / "rand-nachbar").mkdir()
    assert (
        boundary.check(str(rand.parent / "rand-nachbar"), user=None).step == "ausserhalb_aussenrand"
    )


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
    result = boundary.check(raw, user=None)
    assert not result.ok and result.step == step and result.reason


# -- one person, one fence (issue 10): "{username}" makes an entry per person ------------------


@pytest.fixture
def personal(tmp_path: Path, settings: Any) -> Path:
    base = tmp_path / "personen"
    for name in ("anna", "bert"):
        (base / name / "notizen").mkdir(parents=True)
    (tmp_path / "gemeinsam").mkdir()
    settings.FILES_BOUNDARY = [str(base / "{username}"), str(tmp_path / "gemeinsam")]
    return base


def test_username_entry_is_the_persons_own_folder(personal: Path) -> None:
    anna, bert = User(username="anna"), User(username="bert")
    assert boundary.check(str(personal / "anna" / "notizen"), user=anna).ok
    refused = boundary.check(str(personal / "bert" / "notizen"), user=anna)
    assert refused.step == "ausserhalb_aussenrand"
    allowed = refused.reason.split("(", 1)[1]  # only her own fence is named, not bert's
    assert str(personal / "anna") in allowed and str(personal / "bert") not in allowed
    assert boundary.check(str(personal / "bert" / "notizen"), user=bert).ok


def test_global_entries_still_hold_beside_a_personal_one(personal: Path) -> None:
    shared = str(personal.parent / "gemeinsam")
    assert boundary.check(shared, user=User(username="anna")).ok
    assert boundary.check(shared, user=None).ok  # nobody asking: only the global entries


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("..", id="dotdot"),
        pytest.param("../bert", id="dotdot-slash"),
        pytest.param("a/../../bert", id="slash"),
        pytest.param("", id="empty"),
        pytest.param(".anna", id="hidden"),
    ],
)
def test_a_username_that_could_escape_gets_no_personal_fence(personal: Path, name: str) -> None:
    person = User(username=name)
    assert boundary.boundary_dirs(person) == [(personal.parent / "gemeinsam").resolve()]
    for target in (personal, personal / "bert" / "notizen"):
        assert boundary.check(str(target), user=person).step == "ausserhalb_aussenrand"


def test_only_personal_entries_and_no_usable_name_fail_closed(
    personal: Path, settings: Any
) -> None:
    settings.FILES_BOUNDARY = [str(personal / "{username}")]
    result = boundary.check(str(personal / "bert"), user=User(username=".."))
    assert result.step == "kein_aussenrand" and "für deinen Namen" in result.reason


# -- Nova's knowledge zone is never a root (issue 14) --------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("wissen", id="the-zone"),
        pytest.param("wissen/anna-nova", id="inside"),
        pytest.param(".", id="contains-the-zone"),
    ],
)
def test_the_knowledge_zone_is_refused_with_its_own_reason(
    rand: Path, settings: Any, target: str
) -> None:
    (rand / "wissen" / "anna-nova").mkdir(parents=True)
    settings.KNOWLEDGE_DIR = rand / "wissen"
    result = boundary.check(str(rand / target), user=None)
    assert not result.ok and result.step == "wissenszone"
    assert "Novas eigene Wissensablage" in result.reason


def test_a_link_into_the_zone_is_refused_as_the_zone(rand: Path, settings: Any) -> None:
    (rand / "wissen").mkdir()
    settings.KNOWLEDGE_DIR = rand / "wissen"
    os.symlink(rand / "wissen", rand / "harmlos")
    assert boundary.check(str(rand / "harmlos"), user=None).step == "wissenszone"


# -- text that cannot be a path is a named refusal, never an OSError (issue 10) ------------------


@pytest.mark.parametrize(
    ("raw", "step"),
    [
        pytest.param("notizen/" + "x" * 256, "name_zu_lang", id="name-over-255-bytes"),
        pytest.param("ä" * 128, "name_zu_lang", id="multibyte-over-255-bytes"),
        pytest.param("a/" * 2100, "pfad_zu_lang", id="path-over-4096-bytes"),
        pytest.param("no\x00tizen", "kein_pfad", id="nul"),
        pytest.param("\udc80notizen", "pfad_unlesbar", id="lone-surrogate"),
    ],
)
def test_unnameable_paths_are_refused_by_name(rand: Path, raw: str, step: str) -> None:
    result = boundary.check(raw, user=None)
    assert not result.ok and result.step == step and result.reason
