"""`make bench`: runs every bench/bench_*.py in its own process and prints their figures.

The README's performance section is rewritten only when every benchmark that ran ended well
and wrote a fresh table: a failed benchmark leaves the README as it was (its old table would
otherwise stand beside new ones as if measured together).

After the benchmarks, the scaling targets of this run are summed up in one table (printed, kept
in bench/results/summary.md, first in the README's section): every figure a benchmark wrote with
``bench._django.write_figures`` in this run, beside its in-run limit, ratio and target. A
figures file older than the run is never shown as if measured in it; it is named as missing.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results"


def result_name(script: Path) -> str:
    return script.stem.removeprefix("bench_")


def main(argv: list[str]) -> int:
    only = {a.removeprefix("bench_") for a in argv}
    failed: list[str] = []
    started_at = time.time()
    with_figures: list[str] = []
    for script in sorted(BENCH_DIR.glob("bench_*.py")):
        name = result_name(script)
        if only and name not in only:
            continue
        if "write_figures(" in script.read_text():
            with_figures.append(name)
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
    # A run of benchmarks that judge no target (`make bench directives`) keeps the summary of
    # the last run that did: an empty one would stand first in the README as if it were news.
    if with_figures:
        write_summary(started_at=started_at, expected=with_figures)
    if failed:
        print(
            f"fehlgeschlagen: {', '.join(failed)}; README.md bleibt unverändert.",
            file=sys.stderr,
        )
        return 1
    update_readme()
    return 0


# --- the scaling targets of this run --------------------------------------------------------------

SUMMARY_HEADING = "### Scaling targets (issue table): this run's figures"


def _number(value: Any) -> str:
    """A figure as people read it: whole numbers from 100 up, else two significant decimals."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if abs(value) >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}".rstrip("0").rstrip(".")


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def fresh_figures(started_at: float) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The figures files written in this run (mtime at or after ``started_at``) by name, and
    the names of the older ones (ignored: not measured in this run)."""
    fresh: dict[str, dict[str, Any]] = {}
    stale: list[str] = []
    for path in sorted(RESULTS.glob("*.figures.json")):
        name = path.name.removesuffix(".figures.json")
        if path.stat().st_mtime < started_at:
            stale.append(name)
            continue
        fresh[name] = json.loads(path.read_text())
    return fresh, stale


def summary(*, started_at: float, expected: list[str]) -> str:
    """One table of every figure written in this run, and which benchmarks' figures are
    missing: ``expected`` (the benchmarks of this run that write figures) without a fresh
    file, and every older file, which is ignored."""
    fresh, stale = fresh_figures(started_at)
    rows = []
    for name, payload in fresh.items():
        for f in payload.get("figures", []):
            limit = "–"
            if f.get("limit") is not None:
                limit = f"{_number(f['limit'])} {f.get('unit', '')}".strip()
                if f.get("limit_label"):
                    limit += f" ({f['limit_label']})"
            ratio = "–" if f.get("ratio") is None else f"{f['ratio']:.2f}"
            met = {True: "yes", False: "NO"}.get(f.get("met"), "–")
            value = f"{_number(f['value'])} {f.get('unit', '')}".strip()
            cells = [name, f["figure"], value, limit, ratio, f["target"], met]
            rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    reasons = {n: "no figures file written in this run" for n in expected if n not in fresh}
    for n in stale:
        reasons[n] = "figures file older than this run, ignored"
    missing = "; ".join(f"{n} ({why})" for n, why in sorted(reasons.items())) or "none"
    started = dt.datetime.fromtimestamp(started_at, dt.UTC)
    lines = [
        SUMMARY_HEADING,
        "",
        f"Every figure the benchmarks of the run started {started:%Y-%m-%d %H:%M} UTC wrote "
        "(bench/results/*.figures.json), beside the limit measured in the same run; each "
        "benchmark's own table below says how it was measured.",
        "",
        "| benchmark | figure | value | in-run limit | ratio | target | met |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Missing: {missing}.",
    ]
    if not rows:
        lines[6:6] = ["| – | no figures written in this run | – | – | – | – | – |"]
    return "\n".join(lines)


def write_summary(*, started_at: float, expected: list[str]) -> None:
    """bench/results/summary.md with where it was measured, and the table on stdout."""
    from bench import _django

    markdown = summary(started_at=started_at, expected=expected)
    head, _, body = markdown.partition("\n")
    text = f"{head}\n\n{_django.provenance()}\n{body}".strip() + "\n"
    out = RESULTS / "summary.md"
    tmp = out.with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(out)
    print(f"\n=== summary ===\n{text}", flush=True)


MARKER = "<!-- bench tables are inserted below -->"
ORDER = [
    "summary",
    "consent",
    "directives",
    "watcher",
    "retrieval",
    "knowledge",
    "routing",
    "conversation",
    "multi",
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
