"""A missing Chromium is a skip only outside CI and `make test`; there it is a failure that
says why (launcher.browser_verdict, used by the `chromium` fixture in tests/chromium.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from novaberg import launcher

BASE_DIR = Path(__file__).resolve().parent.parent
MISSING = "/nirgends/chromium"


@pytest.mark.parametrize(
    ("env", "verdict"),
    [
        pytest.param({"CI": "true"}, "fail", id="ci"),
        pytest.param({"CI": "1"}, "fail", id="ci-1"),
        pytest.param({"NOVABERG_REQUIRE_BROWSER": "1"}, "fail", id="make-test"),
        pytest.param({"CI": "true", "NOVABERG_REQUIRE_BROWSER": "0"}, "fail", id="ci-wins"),
        pytest.param({}, "skip", id="by-hand"),
        pytest.param({"CI": "false", "NOVABERG_REQUIRE_BROWSER": "0"}, "skip", id="opted-out"),
    ],
)
def test_missing_chromium(env: dict[str, str], verdict: str) -> None:
    got, reason = launcher.browser_verdict({**env, "NOVABERG_CHROMIUM": MISSING})
    assert got == verdict
    assert MISSING in reason and "Chromium fehlt" in reason
    if verdict == "fail":
        assert "CI=true" in reason


def test_present_chromium_runs(tmp_path: Path) -> None:
    binary = tmp_path / "chromium"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    assert launcher.browser_verdict({"CI": "true", "NOVABERG_CHROMIUM": str(binary)}) == (
        "run",
        str(binary),
    )
    binary.chmod(0o644)  # there, but not executable
    assert launcher.browser_verdict({"CI": "true", "NOVABERG_CHROMIUM": str(binary)})[0] == "fail"


def _probe(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """A bare pytest (no Django) whose one test asks for the browser test's fixture."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_probe.py").write_text(
        "def test_needs_the_browser(chromium):\n    assert chromium\n"
    )
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.chromium"]\n')
    clean = {k: v for k, v in os.environ.items() if k not in {"CI", "NOVABERG_REQUIRE_BROWSER"}}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:django", "-p", "no:cacheprovider", "-rs",
         "-c", str(tmp_path / "pytest.ini"), str(tmp_path / "test_probe.py")],
        cwd=tmp_path,
        env={**clean, "PYTHONPATH": str(BASE_DIR), "NOVABERG_CHROMIUM": MISSING, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip


def test_under_ci_the_fixture_fails_with_the_reason(tmp_path: Path) -> None:
    result = _probe(tmp_path, CI="true")
    assert result.returncode == 1, result.stdout
    assert "1 error" in result.stdout and "skipped" not in result.stdout
    assert f"Chromium fehlt: {MISSING}" in result.stdout


def test_by_hand_the_fixture_skips_with_the_reason(tmp_path: Path) -> None:
    result = _probe(tmp_path)
    assert result.returncode == 0, result.stdout
    assert "1 skipped" in result.stdout and f"Chromium fehlt: {MISSING}" in result.stdout
