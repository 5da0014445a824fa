"""The ONNX backend's many-text path: each distinct text embedded once, run side by side, and
every vector exactly the one ``embed_one`` gives for that text alone (issue 16)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from novaberg import embeddings

TEXTS = [
    "Notiz 3\n# Notiz 3\n\nWanderung 3 führt über den Grat zur Hütte; Proviant einpacken.",
    "Ausrüstung\n## Ausrüstung\n\nSchuhe, Jacke, Karte 3. Die Karte zeigt den Steig.",
    "Zeiten\n## Zeiten\n\nAufstieg drei Stunden. Im Oktober wird es um 18 Uhr dunkel.",
    "Was habe ich mir über die Wanderung zur Hütte im Oktober notiert?",
    "Tschüss",
    " ".join(f"Absatz {i}: Die Hütte liegt oberhalb des Sees." for i in range(80)),
]


@pytest.fixture
def onnx(settings: Any) -> Iterator[None]:
    settings.EMBEDDING_DIM = 384
    settings.EMBEDDINGS_BACKEND = "local-onnx"
    yield


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_many_texts_give_the_vectors_of_each_text_alone(onnx: None) -> None:
    alone = [embeddings.embed_one(t) for t in TEXTS]
    together = embeddings.embed(TEXTS + TEXTS[::-1])

    assert len(together) == 2 * len(TEXTS)
    for vec, ref in zip(together, alone + alone[::-1], strict=True):
        assert _cos(vec, ref) >= 0.999
        assert max(abs(x - y) for x, y in zip(vec, ref, strict=True)) < 1e-5


def test_identical_texts_are_embedded_once_and_get_their_own_lists(
    onnx: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    embeddings.warm_up()
    runs: list[int] = []
    real = embeddings._OnnxModel.encode_ids

    def counting(self: Any, ids: Any) -> Any:
        runs.append(1)
        return real(self, ids)

    monkeypatch.setattr(embeddings._OnnxModel, "encode_ids", counting)
    texts = [TEXTS[0], TEXTS[1], TEXTS[0], TEXTS[2], TEXTS[0], TEXTS[3]]

    vectors = embeddings.embed(texts)

    assert len(runs) == 4  # four distinct texts
    assert vectors[0] == vectors[2] == vectors[4]
    assert vectors[0] is not vectors[2]  # a caller may change one without touching the others
