"""The intent classifier: a logistic regression over the morphological features
(``features.read``) and character n-grams, trained on the corpus's **train** split only.

Trained once per process on first use (about 1 s: the train split is tagged with HanTa and
fitted; ``warm_up_in_background`` starts it beside the first turn), deterministic (same split,
same weights). The dev split chose the settings below; the test split is never read here
(its file says so at its top; ``bench/bench_routing.py`` and
``tests/test_understanding_figures.py`` are its only readers).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import pickle
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from conversation.understanding.features import fold, read

logger = logging.getLogger(__name__)
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
CACHE_VERSION = "1"


def _sources(agents: list[Any]) -> list[Path]:
    """What a trained model depends on: the corpus's train split, this package's code and the
    code of every agent whose patterns are features (each agent's package folder)."""
    files = [CORPUS_DIR / "train.json", *sorted(Path(__file__).resolve().parent.glob("*.py"))]
    for agent in agents:
        source = inspect.getsourcefile(type(agent))
        if source:
            files += sorted(Path(source).resolve().parent.glob("*.py"))
    return files


def cache_key() -> str:
    """A digest of everything the trained model is made of: the same key, the same weights."""
    import sklearn  # type: ignore[import-untyped]

    from conversation.agents import all_agents

    agents = all_agents()
    digest = hashlib.sha256(f"{CACHE_VERSION}|{sklearn.__version__}|".encode())
    digest.update("|".join(sorted(agent.name for agent in agents)).encode())
    for path in dict.fromkeys(_sources(agents)):
        digest.update(str(path.name).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:24]


def _cache_path(key: str) -> Path:
    from novaberg.embedded import data_dir

    return data_dir() / "cache" / f"understanding-{key}.pickle"


def _load_or_train() -> IntentModel:
    """The trained model from this machine's cache (written by this code, in the data folder,
    under the digest of its inputs), else trained on the train split (seconds) and cached."""
    key = cache_key()
    path = _cache_path(key)
    try:
        with path.open("rb") as handle:
            cached = pickle.load(handle)  # noqa: S301 (our own file, keyed by its inputs)
        if isinstance(cached, IntentModel):
            cached._lock = threading.Lock()
            return cached
    except FileNotFoundError:
        pass
    except Exception:
        logger.warning("understanding: cache unreadable, training again", exc_info=True)
    trained = IntentModel(load_split("train"))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        lock, trained._lock = trained._lock, None  # type: ignore[assignment]
        try:
            partial.write_bytes(pickle.dumps(trained))
        finally:
            trained._lock = lock
        partial.replace(path)
    except OSError:
        logger.warning("understanding: cache not written", exc_info=True)
    return trained


@lru_cache(maxsize=1)
def _trained() -> IntentModel:
    return _load_or_train()


def model() -> IntentModel:
    with _LOADING:
        return _trained()


@lru_cache(maxsize=512)
def _scores_of(text: str, agent_names: tuple[str, ...]) -> Scores:
    return model().scores(text)


def scores(text: str) -> Scores:
    """The trained model's scores for ``text``, read once per message: a turn asks for them in
    the router, the pending node, the directives agent and the memory write. The agents' names
    are part of the key, since their patterns are features."""
    from conversation.agents import all_agents

    return _scores_of(text, tuple(agent.name for agent in all_agents()))


def warm_up_in_background() -> None:
    """Load (or train) the model beside other work, not in front of a first message."""
    if _trained.cache_info().currsize == 0:
        threading.Thread(target=model, name="understanding-model", daemon=True).start()
