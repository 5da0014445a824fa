"""Root conftest: the fake LLM server plugin, the shared fixtures (tests/fixtures.py) and the
browser test's Chromium fixture (tests/chromium.py)."""

pytest_plugins = ["tests.fakes.pytest_plugin", "tests.fixtures", "tests.chromium"]
