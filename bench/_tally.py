"""What an embedding function was asked to do in a benchmark: texts and seconds.

Standard library only: ``bench_watcher.py`` wraps the product's ``embed`` with it, and
``_before_indexing.py`` the old tree's, in a child process that must not import today's code.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Embed = Callable[[list[str]], list[list[float]]]


class EmbedTally:
    """Calls ``embed`` and counts the texts it was given and the seconds it took."""

    def __init__(self, embed: Embed) -> None:
        self._embed = embed
        self.texts = 0
        self.seconds = 0.0

    def reset(self) -> None:
        self.texts = 0
        self.seconds = 0.0

    def __call__(self, texts: list[str]) -> list[list[float]]:
        started = time.perf_counter()
        out = self._embed(texts)
        self.seconds += time.perf_counter() - started
        self.texts += len(texts)
        return out
