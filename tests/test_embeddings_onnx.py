"""The ONNX Runtime backend of the packaged MiniLM: same vectors as PyTorch (within int8's
error), exported once from the packaged weights, cached under their hash, and the fallback to
PyTorch when ONNX Runtime cannot serve."""

from __future__ import annotations

import fcntl
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from novaberg import embeddings

GERMAN = [
    "Wie backe ich ein Brot mit Sauerteig?",
    "Morgen früh fahre ich mit dem Zug nach Hamburg zu meiner Tante.",
    "Was habe ich mir über die Wanderung zur Hütte notiert?",
    "Der Zahnarzttermin ist am Dienstag um halb neun.",
    "Bitte sprich mich ab jetzt immer mit Sie an.",
    "Im Garten blühen die Tulpen, aber der Rasen braucht dringend Wasser.",
    "Meine Steuererklärung für 2025 liegt im Ordner Finanzen.",
    "Nova, erinnerst du dich an das Rezept für Kaiserschmarrn?",
    "Die Katze schläft auf dem warmen Heizkörper im Flur.",
    "Ich habe keine Lust mehr auf Fußball am Wochenende.",
    "Tschüss",
    "## Ausrüstung\nSchuhe, Jacke, Karte. Die Karte im Maßstab 1:25.000 zeigt den Steig.",
]


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture
def both(settings: Any) -> Iterator[Any]:
    settings.EMBEDDING_DIM = 384
    yield settings


def _embed_with(settings: Any, backend: str, texts: list[str]) -> list[list[float]]:
    settings.EMBEDDINGS_BACKEND = backend
    return embeddings.embed(texts)


def test_onnx_and_pytorch_agree_on_german_sentences(both: Any) -> None:
    onnx = _embed_with(both, "local-onnx", GERMAN)
    torch = _embed_with(both, "local-torch", GERMAN)

    cosines = [_cos(a, b) for a, b in zip(onnx, torch, strict=True)]
    assert min(cosines) >= 0.99, cosines
    assert all(abs(sum(x * x for x in v) - 1.0) < 1e-4 for v in onnx)


def test_onnx_long_text_is_truncated_like_pytorch(both: Any) -> None:
    long_text = " ".join(f"Absatz {i}: Die Hütte liegt oberhalb des Sees." for i in range(300))

    [onnx] = _embed_with(both, "local-onnx", [long_text])
    [torch] = _embed_with(both, "local-torch", [long_text])

    assert _cos(onnx, torch) >= 0.99


def test_onnx_batch_keeps_order_and_ignores_padding(both: Any) -> None:
    texts = ["Hallo", GERMAN[5], "ja", GERMAN[1] * 3, GERMAN[2]]

    batch = _embed_with(both, "local-onnx", texts)
    single = [_embed_with(both, "local-onnx", [t])[0] for t in texts]

    assert [round(_cos(a, b), 4) for a, b in zip(batch, single, strict=True)] == [1.0] * 5


def test_local_picks_onnx_int8_cached_under_the_weights_hash(both: Any) -> None:
    both.EMBEDDINGS_BACKEND = "local"
    embeddings.warm_up()

    assert embeddings.backend_label() == "lokal: all-MiniLM-L6-v2, ONNX int8 (384)"
    model_dir = embeddings.packaged_model_dir()
    cached = embeddings.onnx_cache_paths(model_dir)["int8"]
    assert cached.is_file() and embeddings.weights_hash(model_dir) in cached.name
    assert not [p for p in cached.parent.iterdir() if ".tmp-" in p.name]


def test_a_second_exporter_waits_for_the_first_and_exports_nothing(tmp_path: Path) -> None:
    paths = {v: tmp_path / f"m-{v}.onnx" for v in ("int8", "fp32")}
    lock_path = tmp_path / "m.lock"
    errors: list[BaseException] = []
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first exporter, busy

        def second() -> None:
            try:
                embeddings._export_onnx(embeddings.packaged_model_dir(), paths)
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)

        waiter = threading.Thread(target=second)
        waiter.start()
        waiter.join(timeout=0.5)
        assert waiter.is_alive(), "the second exporter did not wait for the lock"
        paths["int8"].write_bytes(b"exported by the first")  # its atomic rename, done
        fcntl.flock(lock, fcntl.LOCK_UN)
    deadline = time.monotonic() + 30
    while waiter.is_alive() and time.monotonic() < deadline:
        waiter.join(timeout=0.1)

    assert not waiter.is_alive() and errors == []
    assert paths["int8"].read_bytes() == b"exported by the first"
    assert not paths["fp32"].exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-int8.onnx", "m.lock"]


def test_local_falls_back_to_pytorch_when_onnx_cannot_serve(
    both: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the ONNX cache should be")
    both.EMBEDDINGS_CACHE_DIR = not_a_folder
    both.EMBEDDINGS_BACKEND = "local"
    embeddings.reset_embedder()
    try:
        with caplog.at_level(logging.WARNING, logger="novaberg.embeddings"):
            vector = embeddings.embed_one("Wie backe ich ein Brot?")
            label = embeddings.backend_label()
    finally:
        embeddings.reset_embedder()

    assert len(vector) == 384
    assert label == "lokal: all-MiniLM-L6-v2 (384)"
    assert [r for r in caplog.records if getattr(r, "outcome", "") == "onnx_nicht_verfuegbar"]
