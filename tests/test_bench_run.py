"""`make bench` (bench/run.py): the README's tables are rewritten only after a run in which every
benchmark ended well with a fresh table, and every table carries where it was measured."""

from __future__ import annotations

import os
import subprocess
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
