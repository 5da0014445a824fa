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
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
