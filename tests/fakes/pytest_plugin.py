"""Pytest fixtures for the fake OpenAI-compatible server.

Enable with `pytest_plugins = ["tests.fakes.pytest_plugin"]` in the root conftest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture(scope="session")
def _fake_openai_server() -> Iterator[FakeOpenAI]:
    # One server for the whole run: starting a thread and a socket per test buys nothing.
    fake = FakeOpenAI().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def fake_openai(_fake_openai_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The session's fake server with no scripts and no recorded requests."""
    _fake_openai_server.reset()
    yield _fake_openai_server
    _fake_openai_server.reset()


@pytest.fixture
def fake_llm(fake_openai: FakeOpenAI, settings: Any) -> Iterator[FakeOpenAI]:
    """Point the LLM settings at the fake server; `get_gateway()` then returns an OpenAIBackend."""
    # `settings` is pytest-django's fixture; its class was renamed between releases, hence Any.
    from novaberg.llm import reset_gateway

    settings.LLM_BASE_URL = fake_openai.base_url
    settings.LLM_API_KEY = "test"
    settings.LLM_MODEL = "fake-model"
    settings.LLM_TIMEOUT_S = 2
    settings.LLM_MAX_RETRIES = 0
    reset_gateway()
    yield fake_openai
    reset_gateway()
