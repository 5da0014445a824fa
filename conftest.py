"""Root conftest: the fake LLM server plugin and the shared fixtures (tests/conftest.py)."""

pytest_plugins = ["tests.fakes.pytest_plugin", "tests.fixtures"]
