"""`make bench`: runs every bench/bench_*.py in its own process and prints their figures.

The README's performance section is rewritten only when every benchmark that ran ended well
and wrote a fresh table: a failed benchmark leaves the README as it was (its old table would
otherwise stand beside new ones as if measured together).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results"


def result_name(script: Path) -> str:
    return script.stem.removeprefix("bench_")


def main(argv: list[str]) -> int:
    only = {a.removeprefix("bench_") for a in argv}
    failed: list[str] = []
    for script in sorted(BENCH_DIR.glob("bench_*.py")):
        name = result_name(script)
        if only and name not in only:
            continue
        print(f"\n=== {script.stem} ===", flush=True)
        t0 = time.time()
        result = subprocess.run([sys.executable, str(script)], cwd=BENCH_DIR.parent, check=False)
        print(f"--- {script.stem}: {time.time() - t0:.1f} s, exit {result.returncode}")
        out = RESULTS / f"{name}.md"
        if result.returncode != 0:
            failed.append(f"{script.stem} (exit {result.returncode})")
        elif out.exists() and out.stat().st_mtime < t0:
            # It keeps a table but did not write it this time: the README would show an old one.
            failed.append(f"{script.stem} (kein neues Ergebnis in {out.relative_to(BENCH_DIR)})")
    if failed:
        print(
            f"fehlgeschlagen: {', '.join(failed)}; README.md bleibt unverändert.",
            file=sys.stderr,
        )
        return 1
    update_readme()
    return 0


MARKER = "<!-- bench tables are inserted below -->"
ORDER = [
    "consent",
    "directives",
    "watcher",
    "retrieval",
    "knowledge",
    "routing",
    "conversation",
    "soak",
]


def update_readme() -> None:
    """The README's performance section is the latest table of every benchmark, in one order."""
    readme = BENCH_DIR.parent / "README.md"
    text = readme.read_text()
    if MARKER not in text:
        return
    results = {p.stem: p.read_text().strip() for p in RESULTS.glob("*.md")}
    names = [n for n in ORDER if n in results] + sorted(set(results) - set(ORDER))
    tables = "\n\n".join(results[n] for n in names)
    readme.write_text(text.split(MARKER)[0] + MARKER + "\n\n" + tables + "\n")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
