"""Issue 12: a file asked for by name reaches the read agent over the chat path and comes back
with its citation — the whole file, a section by its heading, or whether it is there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from conversation.models import Character, PipelineLog, Session
from files.tests.corpus import make_root

pytestmark = pytest.mark.django_db

CORPUS = {
    "plan.md": "# Umzugsplan\n\nKisten packen am Freitag.\n\n## Termine\n\nSchlüssel am Montag.\n",
    "toepfern/brennkurven.md": (
        "# Brennkurven\n\n## Schrühbrand\n\nLangsam bis 600 Grad.\n\n"
        "## Glasurbrand\n\nBis 1230 Grad, dann 20 Minuten halten.\n"
    ),
}


@pytest.fixture
def indexed(user: Any, nova: Character, tmp_path: Path) -> None:
    make_root(user=user, character=nova, directory=tmp_path / "ablage", corpus=CORPUS)


def _say(api: APIClient, session: Session, text: str) -> dict[str, Any]:
    answer = api.post(f"/api/sessions/{session.pk}/messages/", {"text": text}, format="json")
    assert answer.status_code == 200, answer.content
    body = dict(answer.json())
    route = PipelineLog.objects.get(turn_id=body["turn_id"], node="router")
    assert route.outcome == "dateien_lesen"
    return body


@pytest.mark.parametrize("text", ["Lies mir plan.md vor", "Was steht in plan.md?"])
def test_the_whole_file_by_name(indexed: None, api: APIClient, session: Session, text: str) -> None:
    answer = _say(api, session, text)

    assert answer["status"] == "abgeschlossen"
    assert [r["citation"] for r in answer["records"]] == ["plan.md:1-7"]
    assert "Kisten packen am Freitag" in answer["reply"]


def test_a_section_by_its_heading(indexed: None, api: APIClient, session: Session) -> None:
    answer = _say(api, session, "Lies mir den Abschnitt Glasurbrand aus brennkurven.md vor")

    assert answer["status"] == "abgeschlossen"
    (record,) = answer["records"]
    assert record["path"] == "toepfern/brennkurven.md"
    assert record["citation"].startswith("toepfern/brennkurven.md:7-")
    assert "1230 Grad" in answer["reply"]
    assert "600 Grad" not in answer["reply"]


def test_is_there_a_file_named(indexed: None, api: APIClient, session: Session) -> None:
    there = _say(api, session, "Hast du eine Datei namens plan.md?")
    assert there["status"] == "abgeschlossen"
    assert [r["path"] for r in there["records"]] == ["plan.md"]

    missing = _say(api, session, "Hast du eine Datei namens steuer.md?")
    assert missing["records"] == []
    assert "steuer.md" in missing["reply"] and "finde ich" in missing["reply"]


# With a language model configured: the same sentences reach the read agent (the patterns are
# the fast pre-filter), and what the agent read stands in the composer's [AUFGABE].
@pytest.mark.parametrize(
    ("text", "citation", "said"),
    [
        ("Lies mir plan.md vor", "plan.md:1-7", "Kisten packen am Freitag"),
        ("Was steht in plan.md?", "plan.md:1-7", "Kisten packen am Freitag"),
        (
            "Lies mir den Abschnitt Glasurbrand aus brennkurven.md vor",
            "toepfern/brennkurven.md:7-",
            "1230 Grad",
        ),
        ("Hast du eine Datei namens plan.md?", "plan.md", "plan.md"),
    ],
)
def test_by_name_with_a_model(
    indexed: None,
    fake_llm: Any,
    api: APIClient,
    session: Session,
    text: str,
    citation: str,
    said: str,
) -> None:
    fake_llm.set_default("In deinen Unterlagen steht es so.")

    answer = _say(api, session, text)

    assert answer["status"] == "abgeschlossen"
    assert answer["records"] and answer["records"][0]["citation"].startswith(citation)
    composer = next(
        fake_llm.system_prompt(i)
        for i in range(len(fake_llm.chat_requests()))
        if "[AUFGABE]" in fake_llm.system_prompt(i)
    )
    task = composer.split("[AUFGABE]", 1)[1]
    assert said in task
