"""An answer from a folder that is still being read says so: the record carries the flag, the
composer's [AUFZEICHNUNGEN] entry names it under the citation, and Nova's offline answer tells
the person that more may be in the folder than was found so far."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from conversation.models import Character
from conversation.pipeline import run_turn
from conversation.pipeline.offline import STILL_INDEXING
from files.blocks import records_block
from files.models import IndexRun
from files.retrieval import records_for_turn
from files.tests.corpus import make_root
from novaberg.embeddings import embed_one
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db

QUESTION = "Wie heiß ist der Schrühbrand?"


def _records(user: User, nova: Character) -> list[dict[str, object]]:
    found = records_for_turn(
        user=user, character=nova, query_vector=embed_one(QUESTION), text=QUESTION
    )
    assert found.records, "the corpus answers the question"
    return found.records


def test_a_record_from_a_folder_being_read_says_so_in_the_block(
    user: User, nova: Character, tmp_path: Path
) -> None:
    root = make_root(user=user, character=nova, directory=tmp_path / "ablage")
    assert not any(r.get("folder_still_indexing") for r in _records(user, nova))
    assert "noch gelesen" not in records_block(_records(user, nova))

    IndexRun.objects.create(root=root, state=IndexRun.State.RUNNING)
    records = _records(user, nova)
    assert all(r["folder_still_indexing"] for r in records)
    lines = records_block(records).splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("1. Fundstelle:"))
    excerpt = next(i for i, ln in enumerate(lines) if ln.startswith("   Text der Fundstelle"))
    # Under its citation, before the quoted lines.
    assert any("wird gerade noch gelesen" in ln for ln in lines[head:excerpt])


def test_the_offline_answer_tells_the_person_the_folder_is_still_being_read(
    user: User, nova: Character, tmp_path: Path
) -> None:
    root = make_root(user=user, character=nova, directory=tmp_path / "ablage")
    session = SessionFactory.create(user=user, character=nova)
    calm = run_turn(user=user, character=nova, session=session, text=QUESTION)
    assert calm.records and STILL_INDEXING not in calm.reply

    IndexRun.objects.create(root=root, state=IndexRun.State.WAITING)
    busy = run_turn(user=user, character=nova, session=session, text=QUESTION)
    assert busy.records
    # After the quoted records, not instead of them.
    assert busy.reply.index("Aufzeichnungen") < busy.reply.index(STILL_INDEXING)
