"""Fixtures of the knowledge tests: a zone of its own per test, the pair, a small corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conversation.models import Character
from knowledge.tests.corpus import make_corpus
from knowledge.zone import pair_dir


@pytest.fixture
def zone(settings: Any, tmp_path: Path) -> Path:
    base = tmp_path / "wissen"
    settings.KNOWLEDGE_DIR = base
    return base


@pytest.fixture
def folder(zone: Path, user: Any, nova: Character) -> Path:
    return pair_dir(user=user, character=nova, create=True)


@pytest.fixture
def corpus(folder: Path, user: Any, nova: Character) -> dict[str, Any]:
    return make_corpus(user, nova)
