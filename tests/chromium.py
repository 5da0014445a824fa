"""The browser test's Chromium: found, or a skip, or — under CI=true and `make test` — a failure
with the reason. No Django here, so the decision can be tested in a bare pytest."""

from __future__ import annotations

import pytest

from novaberg.launcher import browser_verdict

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of the Chromium binary the browser test drives."""
    verdict, detail = browser_verdict()
    if verdict == "fail":
        pytest.fail(detail, pytrace=False)
    if verdict == "skip":
        pytest.skip(detail)
    return detail
