"""The write-target check: resolve first, then inside the pair's folder, outside every released
root, nothing hidden, Markdown only — each refusal with its own step and a German reason."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from conversation.models import Character
from files.models import FileRoot
from knowledge.zone import Target, pair_dir, pair_folder_name, schreibziel_pruefen
from tests.factories import UserFactory


def test_folder_name_is_ids_only(zone: Path, user: Any, nova: Character) -> None:
    # A username with a slash or dots never becomes part of a path.
    odd = UserFactory.create(username="../evil/.x")
    folder = pair_dir(user=odd, character=nova)
    assert folder.name == pair_folder_name(user_id=odd.pk, character_id=nova.pk)
    assert folder.parent == zone.resolve()


def test_a_plain_target_inside_the_folder_is_allowed(
    folder: Path, user: Any, nova: Character
) -> None:
    result = schreibziel_pruefen("themen/kennlinie.md", user=user, character=nova)
    assert result.ok and result.status == "ok"
    assert result.rel_path == "themen/kennlinie.md"
    assert result.resolved == folder / "themen" / "kennlinie.md"


@pytest.mark.parametrize(
    ("raw", "step"),
    [
        ("", Target.KEIN_PFAD),
        ("   ", Target.KEIN_PFAD),
        ("a\x00b.md", Target.KEIN_PFAD),
        ("../nachbar.md", Target.AUSSERHALB_ZONE),
        ("themen/../../nachbar.md", Target.AUSSERHALB_ZONE),
        ("/etc/passwd.md", Target.AUSSERHALB_ZONE),
        ("~/notiz.md", Target.AUSSERHALB_ZONE),
        (".geheim.md", Target.VERBORGEN),
        (".git/config.md", Target.VERBORGEN),
        ("themen/.cache/x.md", Target.VERBORGEN),
        ("notiz.txt", Target.FALSCHE_ENDUNG),
        ("skript.py", Target.FALSCHE_ENDUNG),
        ("ohne_endung", Target.FALSCHE_ENDUNG),
        (".", Target.IST_VERZEICHNIS),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else str(v),
)
def test_refusals_name_their_step(
    folder: Path, user: Any, nova: Character, raw: str, step: Target
) -> None:
    result = schreibziel_pruefen(raw, user=user, character=nova)
    assert not result.ok and result.status == "abgelehnt"
    assert result.step == step
    assert result.reason and result.resolved is None


def test_a_link_out_of_the_zone_is_resolved_first(
    folder: Path, tmp_path: Path, user: Any, nova: Character
) -> None:
    outside = tmp_path / "draussen"
    outside.mkdir()
    (folder / "link").symlink_to(outside, target_is_directory=True)
    (folder / "datei.md").symlink_to(outside / "ziel.md")
    for raw in ("link/x.md", "datei.md"):
        result = schreibziel_pruefen(raw, user=user, character=nova)
        assert result.step == Target.AUSSERHALB_ZONE, raw
        assert str(outside) in result.reason


def test_a_folder_md_is_not_a_file(folder: Path, user: Any, nova: Character) -> None:
    (folder / "ordner.md").mkdir()
    assert (
        schreibziel_pruefen("ordner.md", user=user, character=nova).step == Target.IST_VERZEICHNIS
    )


def test_another_pairs_folder_is_outside(
    zone: Path, folder: Path, user: Any, other_user: Any, nova: Character
) -> None:
    theirs = pair_dir(user=other_user, character=nova, create=True)
    result = schreibziel_pruefen(str(theirs / "x.md"), user=user, character=nova)
    assert result.step == Target.AUSSERHALB_ZONE
    result = schreibziel_pruefen(f"../{theirs.name}/x.md", user=user, character=nova)
    assert result.step == Target.AUSSERHALB_ZONE


def test_a_pair_folder_swapped_for_a_link_moves_nothing(
    zone: Path, tmp_path: Path, user: Any, nova: Character
) -> None:
    elsewhere = tmp_path / "anderswo"
    elsewhere.mkdir()
    zone.mkdir(parents=True)
    pair_dir(user=user, character=nova).symlink_to(elsewhere, target_is_directory=True)
    assert schreibziel_pruefen("x.md", user=user, character=nova).step == Target.AUSSERHALB_ZONE


@pytest.mark.parametrize("state", list(FileRoot.State))
def test_a_released_root_inside_the_zone_is_never_written(
    folder: Path, user: Any, other_user: Any, nova: Character, state: str
) -> None:
    inner = folder / "freigegeben"
    inner.mkdir()
    # Anyone's root counts, in any state: the zone check does not ask whose it is.
    FileRoot.objects.create(
        user=other_user, character=nova, path=str(inner), eigentum="nutzer", state=state
    )
    result = schreibziel_pruefen("freigegeben/x.md", user=user, character=nova)
    assert result.step == Target.IN_FREIGABE
    assert str(inner) in result.reason
    # Beside the root, the zone stays writable.
    assert schreibziel_pruefen("daneben.md", user=user, character=nova).ok


def test_a_released_root_around_the_zone_blocks_it(
    zone: Path, folder: Path, user: Any, nova: Character
) -> None:
    FileRoot.objects.create(user=user, character=nova, path=str(zone.parent), eigentum="nutzer")
    assert schreibziel_pruefen("x.md", user=user, character=nova).step == Target.IN_FREIGABE


def test_a_released_root_reached_through_a_link_is_resolved(
    folder: Path, tmp_path: Path, user: Any, nova: Character
) -> None:
    (folder / "echt").mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(folder / "echt", target_is_directory=True)
    FileRoot.objects.create(user=user, character=nova, path=str(alias), eigentum="nutzer")
    assert schreibziel_pruefen("echt/x.md", user=user, character=nova).step == Target.IN_FREIGABE


_SEGMENTS = st.sampled_from(["..", ".", "a", ".h", "b.md", "~", "", "x.txt", "/", "c"])


@hsettings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(_SEGMENTS, min_size=1, max_size=6), text=st.text(max_size=20))
def test_property_an_allowed_target_never_leaves_the_pair_folder(
    folder: Path, user: Any, nova: Character, parts: list[str], text: str
) -> None:
    raw = "/".join(parts) + text
    result = schreibziel_pruefen(raw, user=user, character=nova)
    if result.ok:
        assert result.resolved is not None
        assert folder in result.resolved.parents
        assert result.resolved.suffix == ".md"
        rel = result.resolved.relative_to(folder)
        assert not any(p.startswith(".") for p in rel.parts)
        assert os.path.realpath(result.resolved) == str(result.resolved)
    else:
        assert result.step in set(Target) and result.reason
