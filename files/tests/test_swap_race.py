"""The swap race out of a released folder (issue 27, "Reads and walks that cannot be redirected").

A person who can write into her own released folder exchanges it atomically with a link to a
folder outside the boundary (``renameat2(…, RENAME_EXCHANGE)`` in a tight loop, in a process of
its own) while Nova reads it. The outside twin holds files of the same names with a marker. Not
one read may return the marker, and no index row may hold outside content: every file is
reached relative to the root's directory descriptor, checked against the device and inode
stored at release, component by component without following a link (DESIGN.md "Files").

Measured on the old code (check the path, then open it by name), 2,000 reads per case: the
marker came back in 216 reads through a swapped link, 1,009 through a swapped real folder and
242 through a folder above the root swapped for a link; the index run raised (EINVAL from
realpath, a 500 in the API) or, in an earlier run, stored 67 of 200 rows with outside content.
With the fix: 0 in every case, also with 10,000 reads per case.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conversation.models import Character
from files import reading
from files.boundary import root_path_still_valid
from files.models import FileRoot, IndexEntry
from files.tests.watcher_helpers import write
from files.watcher import index_root_run

pytestmark = pytest.mark.django_db

MARKER = "root:x:0:0:DRAUSSEN"
RENAME_EXCHANGE = 2
AT_FDCWD = -100
# Reads per case: the issue asks for 10,000; 3,400 per case, three cases, is 10,200 reads in
# all, ~35 s on the two loaded cores of the CI machine with the swapper beside them (measured:
# 10,000 reads of one case take 30-35 s there). NOVABERG_SWAP_RACE_READS=10000 runs 10,000 per
# case (0 outside bytes in each, measured).
READS = int(os.environ.get("NOVABERG_SWAP_RACE_READS", "3400"))
INDEX_RUNS = int(os.environ.get("NOVABERG_SWAP_RACE_RUNS", "4"))
FILES = 200
# The refusals a read may give while its folder is being swapped.
FENCED = {
    "pfad_geaendert",
    "pfad_unlesbar",
    "ausserhalb",
    "ausserhalb_aussenrand",
    "fort",
    "link_schleife",
}

# The attacker: exchange two names as fast as it can, in pairs (so the folder is back in place
# when it stops), until the stop file exists.
SWAPPER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2]), sys.argv[3]
n = 0
while not os.path.exists(stop):
    for _ in range(100):
        if libc.renameat2(-100, a, -100, b, 2) != 0:
            sys.exit("renameat2: errno %d" % ctypes.get_errno())
        n += 1
print(n)
"""


def _renameat2(a: Path, b: Path) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "renameat2"):
        return errno.ENOSYS
    if libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE):
        return ctypes.get_errno()
    return 0


def _require_exchange(base: Path) -> None:
    """Skip only where the kernel or the file system refuses RENAME_EXCHANGE."""
    a, b = base / ".probe-a", base / ".probe-b"
    a.mkdir()
    b.symlink_to(base)
    try:
        code = _renameat2(a, b)
        if code in (errno.EINVAL, errno.ENOSYS):
            pytest.skip(f"renameat2(RENAME_EXCHANGE) is refused here (errno {code})")
        assert code == 0, os.strerror(code)
        assert _renameat2(a, b) == 0
    finally:
        b.unlink()
        a.rmdir()


class Swapper:
    def __init__(self, a: Path, b: Path, stop: Path) -> None:
        self.stop = stop
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SWAPPER, str(a), str(b), str(stop)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.swaps = 0

    def finish(self) -> None:
        self.stop.touch()
        out, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err
        self.swaps = int(out.strip() or 0)


@pytest.fixture
def rand(tmp_path: Path, settings: Any) -> Path:
    inside = tmp_path / "rand"
    (inside / "anna").mkdir(parents=True)
    settings.FILES_BOUNDARY = [str(inside)]
    settings.FILES_BASE_DIR = inside
    _require_exchange(inside / "anna")
    return inside


@pytest.fixture
def swapping(tmp_path: Path) -> Iterator[list[Swapper]]:
    started: list[Swapper] = []
    yield started
    for swapper in started:
        if swapper.proc.poll() is None:
            swapper.stop.touch()
            swapper.proc.wait(timeout=30)


def _release(user: Any, nova: Character, folder: Path) -> FileRoot:
    root = FileRoot.objects.create(
        user=user,
        character=nova,
        path=str(folder.resolve()),
        eigentum=FileRoot.Eigentum.NUTZER,
        state=FileRoot.State.ACTIVE,
    )
    # Checked once while in place: the stored identity is this folder's.
    assert root_path_still_valid(root, user=user).ok
    return root


def _swapped(kind: str, tmp_path: Path, rand: Path) -> tuple[Path, Path]:
    """The two names the attacker exchanges: her released folder and a link to the outside
    folder; her folder and (as a real folder of hers outside the boundary) the outside folder
    itself; or the folder *above* the released one and a link to an outside twin of it (the
    root's own path, not only its last component, must not be followed)."""
    outside = tmp_path / "draussen" / "etc"
    if kind == "link":
        link = rand / "anna" / "tausch"
        link.symlink_to(outside, target_is_directory=True)
        return rand / "anna" / "notizen", link
    if kind == "ordner":
        return rand / "anna" / "notizen", outside
    twin = tmp_path / "draussen" / "anna"
    write(twin / "notizen", "passwd", f"{MARKER}:/root:/bin/bash\n")
    link = rand / "tausch"
    link.symlink_to(twin, target_is_directory=True)
    return rand / "anna", link


@pytest.mark.parametrize("kind", ["link", "ordner", "zwischenordner"])
def test_no_read_returns_outside_bytes_while_the_folder_is_swapped(
    tmp_path: Path, rand: Path, user: Any, nova: Character, kind: str, swapping: list[Swapper]
) -> None:
    folder = rand / "anna" / "notizen"
    write(folder, "passwd", "anna:Notizen, nichts Geheimes\n")
    write(tmp_path / "draussen" / "etc", "passwd", f"{MARKER}:/root:/bin/bash\n")
    root = _release(user, nova, folder)
    swapper = Swapper(*_swapped(kind, tmp_path, rand), tmp_path / "stop")
    swapping.append(swapper)

    escaped = read_ok = crashed = 0
    steps: dict[str, int] = {}
    for _ in range(READS):
        try:
            result = reading.zeilen_lesen(
                user=user, character=nova, path="passwd", start=1, root_id=root.pk
            )
        except Exception:  # a 500 in the API: counted, the race goes on
            crashed += 1
            continue
        if MARKER in result.text or MARKER in result.message:
            escaped += 1
        if result.ok:
            read_ok += 1
        else:
            steps[result.step] = steps.get(result.step, 0) + 1
    swapper.finish()

    assert swapper.swaps > 1000, swapper.swaps  # the race really ran
    assert escaped == 0, f"{escaped} of {READS} reads returned outside bytes ({steps})"
    assert crashed == 0, f"{crashed} of {READS} reads raised ({steps})"
    assert read_ok > 0, steps  # reads between the swaps still work
    # Every refusal is a named one: the folder is not the released one right now (or its
    # path did not resolve to anything inside while it was being swapped).
    assert set(steps) <= FENCED, steps


def test_no_index_row_holds_outside_content_while_the_folder_is_swapped(
    tmp_path: Path, rand: Path, user: Any, nova: Character, swapping: list[Swapper]
) -> None:
    folder = rand / "anna" / "notizen"
    outside = tmp_path / "draussen" / "etc"
    outside_hashes = set()
    for n in range(FILES):
        write(folder, f"n{n:03d}.md", f"# Innen {n}\n\nAnnas Notiz Nummer {n}.\n")
        data = f"# Fremd {n}\n\n{MARKER} Nummer {n}.\n"
        write(outside, f"n{n:03d}.md", data)
        outside_hashes.add(hashlib.sha256(data.encode()).hexdigest())
    root = _release(user, nova, folder)
    link = rand / "anna" / "tausch"
    link.symlink_to(outside, target_is_directory=True)
    swapper = Swapper(folder, link, tmp_path / "stop")
    swapping.append(swapper)

    outcomes: list[str] = []
    deadline = time.monotonic() + 60
    for n in range(INDEX_RUNS):
        # The first run and every other: full hash; between them a rescan on the fast path.
        report = index_root_run(root_id=root.pk, full_hash=n % 2 == 0)
        outcomes.append(report.outcome)
        if time.monotonic() > deadline:
            break
    swapper.finish()
    # And once more in peace: what the fast path keeps must be inside content too.
    outcomes.append(index_root_run(root_id=root.pk, full_hash=False).outcome)

    assert swapper.swaps > 100, swapper.swaps
    rows = list(IndexEntry.objects.filter(root=root))
    outside_rows = [
        r.rel_path
        for r in rows
        if r.inhalt_hash in outside_hashes or MARKER in (r.search_text + r.summary + r.topic)
    ]
    assert outside_rows == [], f"{len(outside_rows)} rows with outside content ({outcomes})"
    assert outcomes[-1] == "fertig", outcomes
    assert sum(r.state == IndexEntry.State.PRESENT for r in rows) == FILES
