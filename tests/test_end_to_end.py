"""The whole stack at once, as a person uses it: a rule by chat, a folder released through the
API and indexed by the real Celery worker, then a question whose answer comes from the records.

Nothing is stubbed but the language model (the fake OpenAI-compatible server): the directives
agent, the boundary and gate, the watcher in the worker process, the retrieval over pgvector and
full text, the composer and the responder all run for real.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from directives.models import Directive
from files.models import IndexEntry, IndexRun
from tests.fakes.openai_server import FakeOpenAI
from tests.fixtures import token_client

POTTERY = """# Brennen von Keramik

## Schrühbrand

Der Schrühbrand ist der erste Brand der getrockneten Rohware. Er läuft bei etwa
900 Grad Celsius und macht den Scherben porös, damit er Glasur aufnimmt.

## Glasurbrand

Der Glasurbrand folgt bei 1.200 bis 1.250 Grad.
"""
BREAD = """# Sauerteigbrot

Das Anstellgut am Vorabend mit Roggenmehl und Wasser auffrischen.
Den Teig zwölf Stunden gehen lassen und bei 250 Grad backen.
"""


def _blocks(system: str) -> list[str]:
    return re.findall(r"^\[([A-Z_]+)\]$", system, flags=re.MULTILINE)


def _between(system: str, start: str) -> str:
    """The text of block ``start`` up to the next block header."""
    head = f"[{start}]\n"
    begin = system.index(head) + len(head)
    nxt = re.search(r"^\[[A-Z_]+\]$", system[begin:], flags=re.MULTILINE)
    return system[begin : begin + nxt.start()] if nxt else system[begin:]


@pytest.fixture
def notes(tmp_path: Path, settings: Any) -> Path:
    boundary = tmp_path / "freigaben"
    folder = boundary / "notizen"
    (folder / "toepfern").mkdir(parents=True)
    (folder / "toepfern" / "brennen.md").write_text(POTTERY, encoding="utf-8")
    (folder / "brot.md").write_text(BREAD, encoding="utf-8")
    settings.FILES_BOUNDARY = [str(boundary)]
    return folder


def _wait_indexed(client: APIClient, root_id: int) -> dict[str, Any]:
    """Wait for THE run the confirm started (its id, state "fertig"), then read the root: its
    progress and counts are that run's, published together (issue 9: a number an earlier run
    could also satisfy is no signal)."""
    runs = list(IndexRun.objects.filter(root_id=root_id).values_list("pk", flat=True))
    assert len(runs) == 1, f"the confirm must start exactly one run: {runs}"
    run_id = runs[0]
    deadline = time.monotonic() + 120
    state = ""
    while time.monotonic() < deadline:
        state = IndexRun.objects.get(pk=run_id).state
        if state not in (IndexRun.State.WAITING, IndexRun.State.RUNNING):
            break
        time.sleep(0.3)
    run = IndexRun.objects.get(pk=run_id)
    assert run.state == IndexRun.State.DONE, f"run {run_id} ended {state}: {run.note}"
    body: dict[str, Any] = client.get(f"/api/roots/{root_id}/").json()
    assert body["progress"] == {
        "done": run.progress["total"],
        "total": run.progress["total"],
        "running": False,
    }
    assert body["counts"]["new"] == run.counts["new"]
    return body


@pytest.mark.django_db(transaction=True)
def test_rule_by_chat_folder_by_api_answer_from_records(
    celery_worker_proc: Any, fake_llm: FakeOpenAI, notes: Path, user: Any
) -> None:
    client = token_client(user)
    session_id = client.post("/api/sessions/", {}, format="json").json()["id"]

    def say(text: str) -> dict[str, Any]:
        answer = client.post(f"/api/sessions/{session_id}/messages/", {"text": text}, format="json")
        assert answer.status_code == 200
        return answer.json()

    # 1. A rule by chat: question first, the write only after "ja".
    fake_llm.add(
        json.dumps(
            {"action": "create", "anweisung": "Den Nutzer immer siezen", "kontext": None,
             "target_id": None}
        ),
        match=lambda body: "[FACHSPRACHE]" in body["messages"][0]["content"],
    )  # fmt: skip
    asked = say("Sieze mich ab sofort immer.")
    assert asked["status"] == "rueckfrage" and "Den Nutzer immer siezen" in asked["question"]
    assert not Directive.objects.filter(user=user).exists()
    done = say("ja")
    assert done["status"] == "abgeschlossen"
    assert Directive.objects.get(user=user, active=True).text == "Den Nutzer immer siezen"

    # 2. A folder through the API: the gate shows the resolved path, confirm, the worker indexes.
    released = client.post(
        "/api/roots/", {"path": str(notes / "toepfern" / ".."), "eigentum": "nutzer"},
        format="json",
    )  # fmt: skip
    assert released.status_code == 201, released.json()
    assert released.json()["resolved_path"] == str(notes.resolve())
    assert released.json()["file_count"] == 2
    root_id = released.json()["id"]
    assert client.post(f"/api/roots/{root_id}/confirm/").json()["state"] == "aktiv"
    indexed = _wait_indexed(client, root_id)
    assert indexed["counts"]["new"] == 2 and indexed["counts"]["errors"] == 0
    assert IndexEntry.objects.filter(root_id=root_id, topic_embedding__isnull=False).count() == 2

    # 3. A question: the record reaches the composer as its own block, with its citation.
    fake_llm.add(
        "Laut deinen Unterlagen (toepfern/brennen.md) läuft der Schrühbrand bei etwa 900 Grad.",
        match=lambda body: body["messages"][0]["content"].startswith("[VERFASSER]"),
    )
    fake_llm.set_default("In Ihren Unterlagen steht: etwa 900 Grad.")
    reply = say("Bei wie viel Grad läuft der Schrühbrand?")
    assert reply["status"] == "abgeschlossen"
    assert [r["path"] for r in reply["records"]][0] == "toepfern/brennen.md"
    first = reply["records"][0]
    start, end = (int(n) for n in first["lines"].split("-"))
    assert start <= 5 <= end  # the Schrühbrand section, not the whole file
    assert first["citation"] == f"toepfern/brennen.md:{first['lines']}"

    composer = [r for r in fake_llm.chat_requests() if r["messages"][0]["content"].startswith(
        "[VERFASSER]")][-1]["messages"][0]["content"]  # fmt: skip
    blocks = _blocks(composer)
    assert "AUFZEICHNUNGEN" in blocks
    records_text = _between(composer, "AUFZEICHNUNGEN")
    assert "toepfern/brennen.md" in records_text and "nicht Novas Erinnerung" in records_text
    # Never an entry of her memory: the memory block, if present, does not hold the record.
    if "GEDAECHTNIS" in blocks:
        assert "brennen.md" not in _between(composer, "GEDAECHTNIS")

    responder = [r for r in fake_llm.chat_requests() if r["messages"][0]["content"].startswith(
        "[IDENTITAET]")][-1]["messages"][0]["content"]  # fmt: skip
    # The responder never sees records, and the person's rule stands last.
    assert "AUFZEICHNUNGEN" not in _blocks(responder)
    assert _blocks(responder)[-1] == "DIREKTIVEN"
    assert "Den Nutzer immer siezen" in _between(responder, "DIREKTIVEN")
    assert reply["reply"] == "In Ihren Unterlagen steht: etwa 900 Grad."


@pytest.mark.django_db(transaction=True)
def test_unrelated_question_brings_no_record(
    celery_worker_proc: Any, fake_llm: FakeOpenAI, notes: Path, user: Any
) -> None:
    client = token_client(user)
    released = client.post("/api/roots/", {"path": str(notes), "eigentum": "nutzer"}, format="json")
    root_id = released.json()["id"]
    client.post(f"/api/roots/{root_id}/confirm/")
    _wait_indexed(client, root_id)
    session_id = client.post("/api/sessions/", {}, format="json").json()["id"]
    fake_llm.set_default("Das weiß ich nicht.")
    reply = client.post(
        f"/api/sessions/{session_id}/messages/",
        {"text": "Wer wurde 1954 Fußballweltmeister?"},
        format="json",
    ).json()
    assert reply["records"] == []
    composer = [r for r in fake_llm.chat_requests() if r["messages"][0]["content"].startswith(
        "[VERFASSER]")][-1]["messages"][0]["content"]  # fmt: skip
    assert "AUFZEICHNUNGEN" not in _blocks(composer)
