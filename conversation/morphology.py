"""German morphology for every reader of the person's or Nova's words: HanTa, the Hannover
tagger (lemma and STTS part of speech; pure Python, its model ships inside the package).

One tagger per process, loaded on first use (about 0.2 s); its tables are shared, so calls from
the turn pool's threads are serialised (one sentence takes about 2 ms). Used by the reply's claim
check (``conversation.pipeline.claims``), the understanding of the person's messages
(``conversation.understanding``) and the knowledge agent's request reader.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Word:
    text: str
    lemma: str
    tag: str

    @property
    def low(self) -> str:
        return self.text.lower()


class Tagger:
    def __init__(self) -> None:
        from HanTa import HanoverTagger  # type: ignore[import-untyped]

        self._tagger = HanoverTagger.HanoverTagger("morphmodel_ger.pgz")
        self._lock = threading.Lock()

    def tag(self, tokens: list[str]) -> list[Word]:
        if not tokens:
            return []
        with self._lock:
            tagged = self._tagger.tag_sent(tokens, taglevel=1)
        return [
            Word(t, str(lemma), str(tag))
            for t, (_w, lemma, tag) in zip(tokens, tagged, strict=True)
        ]

    def candidates(self, word: str, cutoff: int = 4) -> list[tuple[str, float]]:
        """The tags ``word`` may have out of context, best first, with their log-probability."""
        with self._lock:
            found = self._tagger.tag_word(word, cutoff=cutoff)
        return [(str(tag), float(p)) for tag, p in found]

    def lemma(self, word: str) -> tuple[str, str]:
        """(lemma, tag) of ``word`` out of context."""
        with self._lock:
            lemma, tag = self._tagger.analyze(word, taglevel=1)
        return str(lemma), str(tag)


_LOADING = threading.Lock()


@lru_cache(maxsize=1)
def _loaded() -> Tagger:
    return Tagger()


def tagger() -> Tagger:
    with _LOADING:  # one load, however many threads ask first
        return _loaded()


def is_loaded() -> bool:
    return _loaded.cache_info().currsize > 0


def warm_up_in_background() -> None:
    """Load the tagger beside other work (once per process), not in front of a first sentence."""
    if not is_loaded():
        threading.Thread(target=tagger, name="morphology-tagger", daemon=True).start()


# Words, file names ("brennen.md"), paths ("~/Notizen/a.md") and signs, in reading order.
_TOKEN_RE = re.compile(
    r"~?/[^\s,;:!?\"'„“”]+|[\wÄÖÜäöüß]+(?:[.\-'][\wÄÖÜäöüß]+)*|[^\w\s]",
)


def tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text)


def tag_text(text: str) -> list[Word]:
    return tagger().tag(tokens(text))
