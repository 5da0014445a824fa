"""First indexing embeds in batches across files, each distinct text once, and the vectors it
stores are the ones ``embed_one`` gives for the same text (issue 16, "Indexing and rescans")."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversation.models import Character
from files import indexing
from files.models import IndexBlock, IndexEntry
from files.tests.watcher_helpers import make_root, write
from files.watcher import index_root_run
from files.watcher import run as run_module
from novaberg import embeddings

FILES = 40  # more than one learning batch
SHARED = "## Einkehr\n\nDie Hütte hat von Mai bis Oktober geöffnet, Kaiserschmarrn und Suppe.\n"


def note(i: int) -> str:
    return (
        f"# Notiz {i}\n\nWanderung {i} führt über den Grat zur Hütte.\n\n"
        f"## Ausrüstung\n\nSchuhe, Jacke, Karte {i}.\n\n{SHARED}"
    )


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every list of texts the indexing path hands to the real embedder."""
    seen: list[list[str]] = []
    real = indexing.embed

    def counting(texts: list[str]) -> list[list[float]]:
        seen.append(list(texts))
        return real(texts)

    monkeypatch.setattr(indexing, "embed", counting)
    return seen


def _cos(a: Any, b: Any) -> float:
    dot = sum(float(x) * float(y) for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(float(x) ** 2 for x in a) * sum(float(y) ** 2 for y in b))


def test_first_run_embeds_in_batches_and_each_distinct_text_once(
    tmp_path: Path, user: Any, nova: Character, calls: list[list[str]]
) -> None:
    base = tmp_path / "rand" / "wandern"
    for i in range(FILES):
        write(base, f"notiz{i:02d}.md", note(i))
    root = make_root(user, nova, base)

    report = index_root_run(root_id=root.pk)

    assert report.outcome == "fertig" and report.counts["new"] == FILES
    # One call per learning batch, not one per file.
    assert len(calls) == math.ceil(FILES / settings.FILES_LEARN_BATCH_FILES)
    texts = [t for call in calls for t in call]
    assert len(texts) == len(set(texts)), "a text was embedded twice"
    # The section every file shares is embedded once for the whole run ...
    shared = [t for t in texts if "Kaiserschmarrn" in t]
    assert len(shared) == 1
    # ... and every file's block of it carries that vector.
    vectors = list(
        IndexBlock.objects.filter(entry__root=root, heading="Einkehr").values_list(
            "embedding", flat=True
        )
    )
    first = vectors[0]
    assert len(vectors) == FILES and first is not None
    assert all(v is not None and list(v) == list(first) for v in vectors)
    # Per file: its topic text and its two own sections, plus the shared one once.
    assert len(texts) == FILES * 3 + 1


def test_an_edit_embeds_only_the_changed_texts(
    tmp_path: Path, user: Any, nova: Character, calls: list[list[str]]
) -> None:
    base = tmp_path / "rand" / "wandern"
    for i in range(4):
        write(base, f"notiz{i}.md", note(i))
    root = make_root(user, nova, base)
    index_root_run(root_id=root.pk)
    calls.clear()

    # A fifth file that shares a section with the others, and one edited section in notiz1.
    write(base, "notiz4.md", note(4))
    write(base, "notiz1.md", note(1).replace("Karte 1.", "Karte 1 und Kompass."))
    report = index_root_run(root_id=root.pk)

    assert report.counts["new"] == 1 and report.counts["changed"] == 1
    texts = [t for call in calls for t in call]
    assert not [t for t in texts if "Kaiserschmarrn" in t], "a stored section was re-embedded"
    assert sorted(t.split("\n")[0] for t in texts if t.startswith("Ausrüstung")) == [
        "Ausrüstung",
        "Ausrüstung",
    ]
    # Two topic texts, the edited section of notiz1, the two own sections of notiz4.
    assert len(texts) == 5


def test_stored_vectors_are_embed_one_of_the_same_text(
    tmp_path: Path, user: Any, nova: Character, calls: list[list[str]]
) -> None:
    base = tmp_path / "rand" / "wandern"
    for i in range(6):
        write(base, f"notiz{i}.md", note(i))
    root = make_root(user, nova, base)
    index_root_run(root_id=root.pk)

    entry = IndexEntry.objects.get(root=root, rel_path="notiz3.md")
    texts = [t for call in calls for t in call]
    # The topic text as the indexing path built it (topic, summary, the enrichment's terms).
    (topic_text,) = [t for t in texts if t.startswith(f"{entry.topic} {entry.summary}")]
    assert entry.topic_embedding is not None
    assert _cos(entry.topic_embedding, embeddings.embed_one(topic_text)) >= 0.999
    blocks = list(IndexBlock.objects.filter(entry=entry, embedding__isnull=False))
    assert len(blocks) == 3
    for block in blocks:
        text = f"{block.heading}\n{block.text}" if block.heading else block.text
        assert text in texts
        assert _cos(block.embedding, embeddings.embed_one(text)) >= 0.999


def test_a_batch_is_written_in_a_fixed_number_of_statements(
    tmp_path: Path, user: Any, nova: Character, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Learning a batch costs the same statements for 5 files as for 30 (one learning batch
    each): the upsert, the search vectors, the blocks and the read-back run per batch."""
    embeddings.warm_up()
    # Progress goes out by the clock as well; on a slow machine that would count here.
    monkeypatch.setattr(run_module, "PROGRESS_EVERY_S", 3600.0)
    counts = []
    for files in (5, 30):
        base = tmp_path / "rand" / f"wandern{files}"
        for i in range(files):
            write(base, f"notiz{i:02d}.md", note(i))
        root = make_root(user, nova, base)
        with CaptureQueriesContext(connection) as queries:
            report = index_root_run(root_id=root.pk)
        assert report.counts["new"] == files
        counts.append(len(queries))
    assert 30 <= settings.FILES_LEARN_BATCH_FILES
    assert counts[0] == counts[1], f"{counts[0]} statements for 5 files, {counts[1]} for 30"


def test_a_file_that_cannot_be_written_fails_by_name_and_the_rest_of_its_batch_is_learned(
    tmp_path: Path, user: Any, nova: Character
) -> None:
    base = tmp_path / "rand" / "wandern"
    base.mkdir(parents=True)
    root = make_root(user, nova, base)

    def item(name: str, text: str) -> indexing.FileToIndex:
        data = text.encode()
        return indexing.FileToIndex(
            root=root,
            rel_path=name,
            format="markdown",
            digest=hashlib.sha256(data).hexdigest(),
            text=text,
            size=len(data),
        )

    # PostgreSQL stores no NUL character in text: that file's rows cannot be written.
    items = [item("a.md", note(1)), item("b.md", note(2) + "\x00"), item("c.md", note(3))]

    results = indexing.index_entries_refresh(items=items)

    assert [r.status for r in results] == [
        indexing.RefreshStatus.NEW,
        indexing.RefreshStatus.FAILED,
        indexing.RefreshStatus.NEW,
    ]
    assert results[1].step == "schreiben" and results[1].message
    stored = IndexEntry.objects.filter(root=root)
    assert sorted(stored.values_list("rel_path", flat=True)) == ["a.md", "c.md"]
    # Each learned file whole: its blocks written and searchable.
    for entry in stored:
        assert entry.blocks.count() == len(entry.block_map) > 0
        assert not entry.blocks.filter(search_vector__isnull=True).exists()
