"""The write layer reaches its folder without following a link on any component (issue 27).

``schreibziel_pruefen`` resolves and checks the target; between that check and the write, a
folder on the way may be exchanged for a link. ``fileio`` opens the target's folder from ``/``
one component at a time with ``O_DIRECTORY | O_NOFOLLOW`` (``files.fsaccess``): the write,
the read and the lock fail with ELOOP instead of landing outside the zone.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from knowledge import fileio

pytestmark = pytest.mark.django_db


@pytest.fixture
def swapped(folder: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A target checked while the pair's folder was a real folder, then that folder (above
    the target's own folder: opening ``themen`` with O_NOFOLLOW alone would follow it)
    swapped for a link to a folder outside the zone holding a file of the same name."""
    (folder / "themen").mkdir()
    target = folder / "themen" / "kennlinie.md"
    target.write_text("# Kennlinie\n")
    outside = tmp_path / "draussen"
    (outside / "themen").mkdir(parents=True)
    (outside / "themen" / "kennlinie.md").write_text("# draußen\n")
    folder.rename(folder.with_name(folder.name + "-alt"))
    folder.symlink_to(outside, target_is_directory=True)
    return target, outside / "themen"


def test_a_write_through_a_swapped_folder_fails_and_leaves_outside_untouched(
    swapped: tuple[Path, Path],
) -> None:
    target, outside = swapped
    with pytest.raises(OSError) as raised:
        fileio.atomic_write(target, b"# neu\n")
    assert raised.value.errno == errno.ELOOP
    assert (outside / "kennlinie.md").read_text() == "# draußen\n"
    assert sorted(p.name for p in outside.iterdir()) == ["kennlinie.md"]


def test_a_read_and_a_lock_through_a_swapped_folder_fail(swapped: tuple[Path, Path]) -> None:
    target, outside = swapped
    with pytest.raises(OSError) as raised:
        fileio.read_bytes(target)
    assert raised.value.errno == errno.ELOOP
    with pytest.raises(OSError), fileio.file_lock(target, key="x"):
        pass
    assert not (outside / ".kennlinie.md.lock").exists()


def test_the_zone_base_swapped_for_a_link_is_not_followed(
    folder: Path, zone: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "fremd"
    (outside / folder.name).mkdir(parents=True)
    zone.rename(zone.with_name(zone.name + "-alt"))
    zone.symlink_to(outside, target_is_directory=True)
    with pytest.raises(OSError) as raised:
        fileio.atomic_write(folder / "notiz.md", b"# neu\n")
    assert raised.value.errno == errno.ELOOP
    assert list((outside / folder.name).iterdir()) == []


def test_new_subfolders_through_a_swapped_folder_are_not_created_outside(
    folder: Path, tmp_path: Path
) -> None:
    # A new file in a new subfolder: the subfolders are made relative to the pair's folder
    # descriptor, so a pair folder swapped for a link creates nothing where the link points.
    outside = tmp_path / "draussen"
    outside.mkdir()
    folder.rename(folder.with_name(folder.name + "-alt"))
    folder.symlink_to(outside, target_is_directory=True)
    with pytest.raises(OSError) as raised:
        fileio.make_dirs_below(folder, Path("themen/neu"))
    assert raised.value.errno == errno.ELOOP
    assert list(outside.iterdir()) == []


def test_new_subfolders_are_made_below_the_folder(folder: Path) -> None:
    fileio.make_dirs_below(folder, Path("themen/neu"))
    fileio.make_dirs_below(folder, Path("themen/neu"))  # existing folders are fine
    assert (folder / "themen" / "neu").is_dir()
    assert oct((folder / "themen").stat().st_mode & 0o777) == "0o700"
