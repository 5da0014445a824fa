"""`make bench` (bench/run.py): the README's tables are rewritten only after a run in which every
benchmark ended well with a fresh table, and every table carries where it was measured."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from bench import _django, run

MARKER = run.MARKER
OLD_TABLE = "### Alt\n\n| a |\n|---|\n| 1 |"


def bench_tree(tmp_path: Path, scripts: dict[str, str]) -> Path:
    bench = tmp_path / "bench"
    (bench / "results").mkdir(parents=True)
    for name, body in scripts.items():
        (bench / f"bench_{name}.py").write_text(body)
    (bench / "results" / "alt.md").write_text(OLD_TABLE + "\n")
    os.utime(bench / "results" / "alt.md", (1_000_000_000, 1_000_000_000))  # an old table
    (tmp_path / "README.md").write_text(f"# Projekt\n\n## Performance\n\n{MARKER}\n\n{OLD_TABLE}\n")
    return bench


def writes(name: str, table: str) -> str:
    return (
        "from pathlib import Path\n"
        f"Path(__file__).parent.joinpath('results', '{name}.md').write_text({table!r})\n"
    )


@pytest.fixture
def in_tree(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def use(monkeypatch: pytest.MonkeyPatch, bench: Path) -> None:
    monkeypatch.setattr(run, "BENCH_DIR", bench)
    monkeypatch.setattr(run, "RESULTS", bench / "results")


def test_a_failed_benchmark_leaves_the_readme_as_it_was(
    in_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = bench_tree(
        in_tree,
        {"gut": writes("gut", "### Gut\n\n| neu |"), "kaputt": "raise SystemExit(3)\n"},
    )
    use(monkeypatch, bench)
    before = (in_tree / "README.md").read_text()
    assert run.main([]) == 1
    assert (in_tree / "README.md").read_text() == before


def test_a_benchmark_that_wrote_no_fresh_table_counts_as_failed(
    in_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = bench_tree(in_tree, {"alt": "print('nichts geschrieben')\n"})
    use(monkeypatch, bench)
    before = (in_tree / "README.md").read_text()
    assert run.main([]) == 1
    assert (in_tree / "README.md").read_text() == before


def test_a_clean_run_puts_the_fresh_tables_into_the_readme(
    in_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = bench_tree(in_tree, {"gut": writes("gut", "### Gut\n\n| neu |")})
    use(monkeypatch, bench)
    assert run.main([]) == 0
    readme = (in_tree / "README.md").read_text()
    assert "| neu |" in readme and readme.startswith("# Projekt")


def test_every_result_names_commit_date_and_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_django, "RESULTS_DIR", tmp_path)
    _django.write_result("probe", "### Probe\n\n| x |\n|---|\n| 1 |")
    text = (tmp_path / "probe.md").read_text()
    lines = text.splitlines()
    assert lines[0] == "### Probe"
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert lines[2].startswith(f"Commit `{head}")
    assert " UTC, " in lines[2] and "cores" in lines[2]


def test_the_last_benchmark_to_leave_stops_the_server_a_benchmark_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from novaberg import embedded

    stopped: list[str] = []
    monkeypatch.setattr(_django, "_lease_dir", lambda: tmp_path)
    monkeypatch.setattr(embedded, "stop_postgres", lambda: stopped.append("postgres") or True)
    (tmp_path / "postgres.started").write_text("1")
    finished = subprocess.Popen(["true"])
    finished.wait()
    (tmp_path / str(finished.pid)).write_text("killed hard")
    (tmp_path / str(os.getppid())).write_text("another benchmark, still running")
    (tmp_path / str(os.getpid())).write_text("this one")
    monkeypatch.setattr(_django, "_leased", True)
    _django._release()
    assert stopped == []  # the other one still uses it
    assert not (tmp_path / str(finished.pid)).exists()  # a dead lease is cleared
    (tmp_path / str(os.getppid())).unlink()
    (tmp_path / str(os.getpid())).write_text("this one")
    monkeypatch.setattr(_django, "_leased", True)
    _django._release()
    assert stopped == ["postgres"]
    assert not (tmp_path / "postgres.started").exists()


def test_a_server_no_benchmark_started_is_left_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from novaberg import embedded

    stopped: list[str] = []
    monkeypatch.setattr(_django, "_lease_dir", lambda: tmp_path)
    monkeypatch.setattr(embedded, "stop_postgres", lambda: stopped.append("postgres") or True)
    (tmp_path / str(os.getpid())).write_text("this one")
    monkeypatch.setattr(_django, "_leased", True)
    _django._release()
    assert stopped == []


def figures_file(results: Path, name: str, figures: list[dict[str, object]]) -> Path:
    path = results / f"{name}.figures.json"
    path.write_text(json.dumps({"provenance": "Commit `x`", "figures": figures}))
    return path


FRESH_FIGURES: list[dict[str, object]] = [
    {
        "figure": "unchanged rescan, fast path",
        "value": 120000.0,
        "unit": "files/s",
        "limit": 200000.0,
        "limit_label": "bare walk + lstat",
        "ratio": 0.6,
        "target": "≥ 0.50 of the bare walk",
        "met": True,
    },
    {
        "figure": "consent reader",
        "value": 80000.0,
        "unit": "answers/s",
        "limit": None,
        "limit_label": "",
        "ratio": None,
        "target": "≥ 100,000 answers/s",
        "met": False,
    },
]
STALE_FIGURES: list[dict[str, object]] = [
    {
        "figure": "turn-text embedding",
        "value": 3.0,
        "unit": "ms p50",
        "limit": 8.0,
        "limit_label": "PyTorch",
        "ratio": 0.38,
        "target": "≤ 0.5× PyTorch",
        "met": True,
    }
]


def test_the_summary_shows_this_runs_figures_and_names_the_missing_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, "RESULTS", tmp_path)
    stale = figures_file(tmp_path, "embeddings", STALE_FIGURES)
    os.utime(stale, (1_000_000_000, 1_000_000_000))  # from an earlier run
    started = time.time() - 1
    figures_file(tmp_path, "watcher", FRESH_FIGURES)
    table = run.summary(started_at=started, expected=["watcher", "multi"])
    rows = [line for line in table.splitlines() if line.startswith("| watcher ")]
    assert rows == [
        "| watcher | unchanged rescan, fast path | 120,000 files/s | "
        "200,000 files/s (bare walk + lstat) | 0.60 | ≥ 0.50 of the bare walk | yes |",
        "| watcher | consent reader | 80,000 answers/s | – | – | ≥ 100,000 answers/s | NO |",
    ]
    assert "turn-text embedding" not in table  # an older file is never shown as this run's
    assert table.splitlines()[-1] == (
        "Missing: embeddings (figures file older than this run, ignored); "
        "multi (no figures file written in this run)."
    )


def test_a_clean_run_puts_the_summary_first_in_the_readme(
    in_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = FRESH_FIGURES[:1]
    bench = bench_tree(
        in_tree,
        {
            "gut": writes("gut", "### Gut\n\n| neu |")
            + "import json\n"
            + "Path(__file__).parent.joinpath('results', 'gut.figures.json').write_text("
            + f"json.dumps({{'figures': {body!r}}}))\n"
            + "# write_figures( is what run.py looks for\n",
        },
    )
    figures_file(bench / "results", "alt", STALE_FIGURES)
    os.utime(bench / "results" / "alt.figures.json", (1_000_000_000, 1_000_000_000))
    use(monkeypatch, bench)
    assert run.main([]) == 0
    section = (in_tree / "README.md").read_text().split(MARKER)[1].strip()
    assert section.startswith(run.SUMMARY_HEADING)
    assert "| gut | unchanged rescan, fast path | 120,000 files/s |" in section
    assert "Missing: alt (figures file older than this run, ignored)." in section
    summary = (bench / "results" / "summary.md").read_text().splitlines()
    assert summary[2].startswith("Commit `")  # where it was measured, under its heading


def test_a_run_that_judges_no_target_keeps_the_last_summary(
    in_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `make bench directives` after a full run: the summary of the full run stays.
    bench = bench_tree(in_tree, {"gut": writes("gut", "### Gut\n\n| neu |")})
    earlier = "### Scaling targets (issue table): this run's figures\n\n| watcher | 0.53 |\n"
    (bench / "results" / "summary.md").write_text(earlier)
    use(monkeypatch, bench)
    assert run.main(["gut"]) == 0
    assert (bench / "results" / "summary.md").read_text() == earlier
    assert "| watcher | 0.53 |" in (in_tree / "README.md").read_text()
