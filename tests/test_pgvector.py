"""pgvector through the ORM: a cosine query on real embeddings."""

from __future__ import annotations

from typing import Any

import pytest
from pgvector.django import CosineDistance

from conversation.models import Character, MemoryEntry
from novaberg import embeddings


@pytest.mark.django_db
def test_cosine_query_through_the_orm_finds_the_nearest_memory(user: Any, nova: Character) -> None:
    texts = [
        "Anna backt sonntags Sauerteigbrot im Holzofen.",
        "Anna fährt im Sommer mit dem Fahrrad an die Ostsee.",
        "Anna spielt seit zehn Jahren Cello im Orchester.",
    ]
    for text, vector in zip(texts, embeddings.embed(texts), strict=True):
        MemoryEntry.objects.create(user=user, character=nova, text=text, embedding=vector)
    query = embeddings.embed_one("Welches Brot backt sie?")
    ranked = list(
        MemoryEntry.objects.filter(user=user)
        .annotate(distance=CosineDistance("embedding", query))
        .order_by("distance")
    )
    assert ranked[0].text.startswith("Anna backt")
    assert ranked[0].distance < ranked[1].distance <= ranked[2].distance


@pytest.mark.django_db
def test_vector_extension_and_hnsw_index_exist() -> None:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        version = cur.fetchone()
        cur.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_embedding_hnsw'")
        index = cur.fetchone()
    assert version is not None
    assert index is not None and "hnsw" in index[0] and "vector_cosine_ops" in index[0]
