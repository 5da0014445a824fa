"""Directives benchmark: ``python bench/bench_directives.py``.

1. ``read_answer`` throughput (answers/second) over the mixed answers of bench_consent.
2. Loading the [DIREKTIVEN] block for a person with 1,000 rows (500 active, 500 inactive
   history rows), ms p50/p95 over repeated loads, on the benchmark's own database.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import _django  # noqa: E402
from bench.bench_consent import ANSWERS, _run  # noqa: E402

ROWS = 1000
LOADS = 200


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def bench_block(*, every_active: int) -> tuple[list[float], int, int]:
    """Every ``every_active``-th row is active (1 = all, 2 = half)."""
    from django.contrib.auth import get_user_model

    from directives.blocks import directives_block
    from directives.models import Directive

    user, _ = get_user_model().objects.get_or_create(username="bench-directives")
    Directive.objects.filter(user=user).delete()
    Directive.objects.bulk_create(
        Directive(
            user=user,
            text=f"Regel {n}: Sprich nie von Thema {n} und sieze mich immer",
            context="aus dem Benchmark" if n % 10 == 0 else "",
            active=n % every_active == 0,
        )
        for n in range(ROWS)
    )
    directives_block(user=user)  # warm the connection and the plan
    timings: list[float] = []
    size = 0
    for _ in range(LOADS):
        t0 = time.perf_counter()
        block = directives_block(user=user)
        timings.append((time.perf_counter() - t0) * 1000)
        size = len(block)
    active = Directive.objects.filter(user=user, active=True).count()
    Directive.objects.filter(user=user).delete()
    return timings, size, active


def main() -> int:
    _django.setup()
    done, elapsed_s, outcomes = _run(2.0)
    rate = done / elapsed_s
    lines: list[str] = []
    for every_active in (1, 2):
        timings, size, active = bench_block(every_active=every_active)
        p50 = statistics.median(timings)
        p95 = _percentile(timings, 0.95)
        label = f"`[DIREKTIVEN]` block load, {ROWS} rows ({active} active)"
        lines += [
            f"| {label}, p50 | {p50:.2f} ms |",
            f"| {label}, p95 | {p95:.2f} ms |",
            f"| block size ({active} active) | {size:,} chars |",
        ]
    table = "\n".join(
        [
            "### Directives",
            "",
            "| measure | value |",
            "|---|---|",
            f"| `read_answer` answers/s ({len(ANSWERS)} mixed answers, "
            f"{outcomes['consent']} consent) | {rate:,.0f} |",
            f"| `read_answer` µs/answer | {1e6 / rate:.2f} |",
            *lines,
        ]
    )
    _django.write_result("directives", table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
