"""The intent classifier: a logistic regression over the morphological features
(``features.read``) and character n-grams, trained on the corpus's **train** split only.

Trained once per process on first use (about 1 s: the train split is tagged with HanTa and
fitted; ``warm_up_in_background`` starts it beside the first turn), deterministic (same split,
same weights). The dev split chose the settings below; the test split is never read here
(its file says so at its top; ``bench/bench_routing.py`` and
``tests/test_understanding_figures.py`` are its only readers).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from conversation.understanding.features import fold, read

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
# Settings chosen on the dev split (bench/bench_understanding.py prints the dev figures).
C = 4.0
CHAR_NGRAMS = (3, 4)


MESSAGE = "nachricht"  # a message of its own; "antwort" rows answer an open question


def load_split(name: str, kind: str = MESSAGE) -> list[dict[str, str]]:
    """The labelled rows of one split ("train", "dev"; "test" only for its two readers)."""
    raw: dict[str, Any] = json.loads((CORPUS_DIR / f"{name}.json").read_text(encoding="utf-8"))
    return [dict(row) for row in raw["messages"] if row.get("art", MESSAGE) == kind]


@dataclass(frozen=True)
class Scores:
    label: str
    confidence: float
    ranked: tuple[tuple[str, float], ...]
    features: frozenset[str] = frozenset()


class IntentModel:
    def __init__(self, rows: list[dict[str, str]]) -> None:
        from sklearn.feature_extraction import DictVectorizer  # type: ignore[import-untyped]
        from sklearn.feature_extraction.text import TfidfVectorizer  # type: ignore[import-untyped]
        from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

        texts = [row["text"] for row in rows]
        labels = [row["label"] for row in rows]
        self._words = DictVectorizer()
        self._chars = TfidfVectorizer(
            analyzer="char_wb", ngram_range=CHAR_NGRAMS, sublinear_tf=True, min_df=1
        )
        x = self._matrix(texts, fit=True)
        self._model = LogisticRegression(
            C=C, solver="newton-cg", max_iter=2000, class_weight="balanced"
        )
        self._model.fit(x, labels)
        self._lock = threading.Lock()

    def _matrix(self, texts: list[str], *, fit: bool = False) -> Any:
        features = [[*read(t).features, *_pattern_features(t)] for t in texts]
        return self._matrix_of(features, texts, fit)

    def _matrix_of(self, feature_lists: list[list[str]], texts: list[str], fit: bool) -> Any:
        from scipy.sparse import hstack  # type: ignore[import-untyped]

        bags = [dict.fromkeys(features, 1.0) for features in feature_lists]
        folded = [fold(text) for text in texts]
        if fit:
            return hstack(
                [self._words.fit_transform(bags), self._chars.fit_transform(folded)]
            ).tocsr()
        return hstack([self._words.transform(bags), self._chars.transform(folded)]).tocsr()

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(str(c) for c in self._model.classes_)

    def scores(self, text: str) -> Scores:
        features = [*read(text).features, *_pattern_features(text)]
        with self._lock:
            row = self._model.predict_proba(self._matrix_of([features], [text], False))[0]
        ranked = tuple(
            sorted(
                ((str(c), float(p)) for c, p in zip(self._model.classes_, row, strict=True)),
                key=lambda pair: -pair[1],
            )
        )
        return Scores(ranked[0][0], ranked[0][1], ranked, frozenset(features))


def _pattern_features(text: str) -> list[str]:
    """The agents' own patterns as evidence (``Agent.detect``): what they were built to see
    weighs in, the classifier decides."""
    from conversation.agents import all_agents

    return [f"muster={agent.name}" for agent in all_agents() if agent.detect(text)]


_LOADING = threading.Lock()


@lru_cache(maxsize=1)
def _trained() -> IntentModel:
    return IntentModel(load_split("train"))


def model() -> IntentModel:
    with _LOADING:
        return _trained()


def warm_up_in_background() -> None:
    if _trained.cache_info().currsize == 0:
        threading.Thread(target=model, name="understanding-model", daemon=True).start()
