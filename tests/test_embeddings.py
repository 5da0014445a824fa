"""Embeddings: the real packaged local model, and the openai backend against the fake server."""

from __future__ import annotations

import math
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from novaberg import embeddings
from novaberg.embeddings import EmbeddingError, embed, embed_one
from tests.fakes.openai_server import FakeOpenAI


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))  # both are unit length


def _norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


@pytest.fixture
def local(settings: Any) -> None:
    # No reset_embedder() here: the packaged model takes seconds to load, and the embedder cache
    # follows settings by itself, so every local test shares the one loaded model.
    settings.EMBEDDINGS_BACKEND = "local"
    settings.EMBEDDING_DIM = 384


@pytest.fixture
def remote(settings: Any, fake_openai: FakeOpenAI) -> Iterator[FakeOpenAI]:
    settings.EMBEDDINGS_BACKEND = "openai"
    settings.EMBEDDINGS_MODEL = "fake-embed"
    settings.EMBEDDINGS_BASE_URL = fake_openai.base_url
    settings.LLM_API_KEY = "test"
    settings.LLM_TIMEOUT_S = 2
    settings.LLM_MAX_RETRIES = 0
    settings.EMBEDDING_DIM = 384
    yield fake_openai


# -- local model -------------------------------------------------------------------------------


def test_local_german_sentence_has_dim_floats_and_unit_norm(local: None) -> None:
    vector = embed_one("Ich gehe morgen mit meiner Schwester in den Zoo.")

    assert len(vector) == 384
    assert all(isinstance(x, float) for x in vector)
    assert _norm(vector) == pytest.approx(1.0, abs=1e-4)


def test_local_bread_question_is_closer_to_bread_recipe_than_football(local: None) -> None:
    question, recipe, football = embed(
        [
            "Wie backe ich ein Brot?",
            "Rezept für Sauerteigbrot im Ofen",
            "Die Fußballweltmeisterschaft 1954",
        ]
    )

    assert _cosine(question, recipe) > _cosine(question, football)


def test_local_batch_of_40_gives_40_vectors_in_order(local: None) -> None:
    texts = [f"Notiz Nummer {i}: heute war ein guter Tag." for i in range(40)]

    vectors = embed(texts)

    assert len(vectors) == 40
    assert all(len(v) == 384 for v in vectors)
    # Order is kept across the batches of 32: the 35th vector is that of the 35th text.
    assert _cosine(vectors[35], embed_one(texts[35])) == pytest.approx(1.0, abs=1e-4)


def test_local_empty_input_gives_no_vectors(local: None) -> None:
    assert embed([]) == []


def test_local_label_and_warm_up(local: None) -> None:
    embeddings.warm_up()

    assert embeddings.backend_label() == "lokal: all-MiniLM-L6-v2, ONNX int8 (384)"


def test_local_torch_label_and_warm_up(local: None, settings: Any) -> None:
    settings.EMBEDDINGS_BACKEND = "local-torch"
    embeddings.warm_up()

    assert embeddings.backend_label() == "lokal: all-MiniLM-L6-v2 (384)"


def test_local_dimension_setting_mismatch_is_named(local: None, settings: Any) -> None:
    settings.EMBEDDING_DIM = 768

    with pytest.raises(EmbeddingError) as info:
        embed_one("Hallo")

    assert info.value.step == "dimension_falsch"


# -- openai backend ----------------------------------------------------------------------------


def test_openai_backend_gives_right_dim_and_unit_vectors(remote: FakeOpenAI) -> None:
    vectors = embed(["Wie backe ich ein Brot?", "Wie backe ich ein Brot?", "Fußball 1954"])

    assert [len(v) for v in vectors] == [384, 384, 384]
    assert all(_norm(v) == pytest.approx(1.0, abs=1e-6) for v in vectors)
    assert vectors[0] == vectors[1]
    [body] = [r for r in remote.requests if r["path"] == "/v1/embeddings"]
    assert body["model"] == "fake-embed"
    assert body["input"] == ["Wie backe ich ein Brot?", "Wie backe ich ein Brot?", "Fußball 1954"]
    assert embeddings.backend_label() == "openai: fake-embed (384)"


def test_openai_backend_dimension_mismatch_is_named(remote: FakeOpenAI, settings: Any) -> None:
    settings.EMBEDDING_DIM = 256  # the fake answers with its 384

    with pytest.raises(EmbeddingError) as info:
        embed_one("Hallo Nova")

    assert info.value.step == "dimension_falsch"


def test_openai_backend_server_with_other_dim_is_named(settings: Any) -> None:
    with FakeOpenAI(dim=768) as other:
        settings.EMBEDDINGS_BACKEND = "openai"
        settings.EMBEDDINGS_MODEL = "fake-embed"
        settings.EMBEDDINGS_BASE_URL = other.base_url
        settings.LLM_MAX_RETRIES = 0
        settings.EMBEDDING_DIM = 384

        with pytest.raises(EmbeddingError) as info:
            embed(["eins", "zwei"])

    assert info.value.step == "dimension_falsch"


def test_openai_backend_base_url_defaults_to_llm_base_url(
    settings: Any, fake_openai: FakeOpenAI
) -> None:
    settings.EMBEDDINGS_BACKEND = "openai"
    settings.EMBEDDINGS_MODEL = "fake-embed"
    settings.EMBEDDINGS_BASE_URL = ""
    settings.LLM_BASE_URL = fake_openai.base_url
    settings.EMBEDDING_DIM = 384

    assert len(embed_one("Hallo")) == 384
    assert [r["path"] for r in fake_openai.requests] == ["/v1/embeddings"]


def test_openai_backend_connection_refused_is_named(settings: Any) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.EMBEDDINGS_BACKEND = "openai"
    settings.EMBEDDINGS_MODEL = "fake-embed"
    settings.EMBEDDINGS_BASE_URL = f"http://127.0.0.1:{port}/v1"
    settings.LLM_MAX_RETRIES = 0

    with pytest.raises(EmbeddingError) as info:
        embed_one("Hallo")

    assert info.value.step == "verbindung"
