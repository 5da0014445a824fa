"""`make bench`: runs every bench/bench_*.py in its own process and prints their figures."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    only = set(argv)
    failed: list[str] = []
    for script in sorted(BENCH_DIR.glob("bench_*.py")):
        if only and script.stem not in only:
            continue
        print(f"\n=== {script.stem} ===", flush=True)
        t0 = time.perf_counter()
        result = subprocess.run([sys.executable, str(script)], cwd=BENCH_DIR.parent, check=False)
        print(f"--- {script.stem}: {time.perf_counter() - t0:.1f} s, exit {result.returncode}")
        if result.returncode != 0:
            failed.append(script.stem)
    update_readme()
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


MARKER = "<!-- bench tables are inserted below -->"
ORDER = ["consent", "directives", "watcher", "retrieval", "conversation"]


def update_readme() -> None:
    """The README's performance section is the latest table of every benchmark, in one order."""
    readme = BENCH_DIR.parent / "README.md"
    text = readme.read_text()
    if MARKER not in text:
        return
    results = {p.stem: p.read_text().strip() for p in (BENCH_DIR / "results").glob("*.md")}
    names = [n for n in ORDER if n in results] + sorted(set(results) - set(ORDER))
    tables = "\n\n".join(results[n] for n in names)
    readme.write_text(text.split(MARKER)[0] + MARKER + "\n\n" + tables + "\n")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
