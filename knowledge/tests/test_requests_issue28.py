"""Issue 28: knowledge requests are read with German morphology (lemma, part of speech), so one
more word, another word order or another verb of the same meaning still reaches her library;
ordinary chat with the same words stays chat. End to end over the turn: the action reached and
the files after "ja" and after "nein"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conversation.agents import all_agents
from conversation.models import Character, PendingQuestion, Session
from conversation.pipeline import run_turn
from files.models import FileRoot, IndexEntry
from files.watcher import index_root_run
from knowledge.agent.classify import KnowledgeRequest, classify
from knowledge.models import KnowledgeEntry
from knowledge.tools import datei_schreiben

BRENNEN = """# Brennen im Elektroofen

Diese Notiz fasst zusammen, wie ich Steinzeug brenne.

## Schrühbrand

Der erste Brand heißt Schrühbrand.
Bis 600 °C wird mit 100 °C pro Stunde aufgeheizt, damit das Restwasser entweicht.
Danach geht es zügig weiter bis 900 °C.

## Glasurbrand

Beim Glasurbrand wird auf 1240 °C gebrannt, das entspricht Segerkegel SK 6a.
Glasierte Stücke dürfen sich nie berühren.
"""
HOCHBEET = """# Hochbeet

Das Hochbeet wird in Schichten gefüllt: unten 30 cm Äste, darüber Laub, oben 20 cm Erde.
Tomaten brauchen mindestens 60 cm Abstand.
"""


def route(text: str) -> str:
    return next((a.name for a in all_agents() if a.detect(text)), "gespraech")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Merk dir das Wichtigste aus brennen.md gründlich", ("lernen", "", "brennen.md")),
        ("Lies brennen.md noch einmal und merk es dir", ("lernen", "", "brennen.md")),
        ("Präg dir brennen.md ein", ("lernen", "", "brennen.md")),
        ("Präge dir die Notizen zum Hochbeet ein", ("lernen", "Hochbeet", "")),
        ("Lerne die Datei tomaten.md", ("lernen", "", "tomaten.md")),
        ("Nimm brennen.md in dein Wissen auf", ("lernen", "", "brennen.md")),
        ("Merken Sie sich das Wichtigste aus brennen.md", ("lernen", "", "brennen.md")),
        ("Kannst du dir brennen.md bitte merken?", ("lernen", "", "brennen.md")),
        ("Entferne aus deinem Wissen den Absatz über Kegel", ("loeschen", "Kegel", "")),
        ("Streich den Absatz über Kegel aus deinem Wissen", ("loeschen", "Kegel", "")),
        ("Vergiss den Abschnitt zu Kegeln in deinem Wissen", ("loeschen", "Kegeln", "")),
        ("Was weißt du in deinem Wissen über Glasuren", ("fragen", "Glasuren", "")),
        ("Was steht in deinem Wissen zu Glasuren?", ("fragen", "Glasuren", "")),
        ("Was steht in Ihrem Wissen zu Glasuren?", ("fragen", "Glasuren", "")),
        ("Was hast du dir über Keramik gemerkt?", ("fragen", "Keramik", "")),
        ("Schau in deinem Wissen nach, was du über Glasuren hast", ("fragen", "Glasuren", "")),
    ],
)
def test_knowledge_requests_are_read_by_verb_and_object(
    text: str, expected: tuple[str, str, str]
) -> None:
    kind, query, file = expected
    assert classify(text) == KnowledgeRequest(kind=kind, query=query, file=file)
    assert route(text) == "wissen"


@pytest.mark.parametrize(
    "text",
    [
        "Ich merke mir das schon",
        "Weißt du, was mir passiert ist?",
        # A wish to learn about the world: the conversation turn answers it (and still sees
        # [EIGENES WISSEN] on the turn vector); it is no order about her library.
        "Ich will mehr über Keramik wissen",
        "Mein Wissen über Keramik ist begrenzt",
        "Dein Wissen über Keramik ist beeindruckend",
        "Merk dir brennen.md nicht",
        "Hast du dir brennen.md gemerkt?",
        "Merk dir, dass brennen.md morgen fertig ist",
        "Was hast du dir über mich gemerkt?",  # the person: memory, not her library
        "Ich habe den Absatz über Kegel aus meinem Wissen gestrichen",
        "Ich lerne gerade für die Prüfung.",
        "Das muss ich mir merken, z.B. die 900 Grad.",
        "Was weißt du über Tee?",
    ],
)
def test_ordinary_chat_with_the_same_words_stays_out(text: str) -> None:
    assert classify(text) is None
    assert route(text) != "wissen"


@pytest.fixture
def released(tmp_path: Path, user: Any, nova: Character) -> FileRoot:
    base = tmp_path / "ablage"
    base.mkdir()
    (base / "brennen.md").write_text(BRENNEN, encoding="utf-8")
    (base / "hochbeet.md").write_text(HOCHBEET, encoding="utf-8")
    root = FileRoot.objects.create(
        user=user, character=nova, path=str(base.resolve()), state=FileRoot.State.ACTIVE
    )
    assert index_root_run(root_id=root.pk, full_hash=True).outcome == "fertig"
    return root


@pytest.mark.django_db
@pytest.mark.parametrize(
    "order",
    [
        "Merk dir das Wichtigste aus brennen.md gründlich",
        "Lies brennen.md noch einmal und merk es dir",
        "Präg dir brennen.md ein",
        "Nimm brennen.md in dein Wissen auf",
    ],
)
def test_learning_orders_learn_the_facts_of_the_file(
    order: str, zone: Path, released: FileRoot, session: Session, user: Any, nova: Character
) -> None:
    result = run_turn(user=user, character=nova, session=session, text=order)
    assert result.status == "abgeschlossen", result.reply
    assert "brennen.md" in result.reply and "gemerkt" in result.reply
    text = (zone / f"{user.pk}-{nova.pk}" / "erarbeitet" / "brennen.md").read_text()
    # The facts, not the first sentence of each section only.
    assert "100 °C pro Stunde" in text and "900 °C" in text and "1240 °C" in text
    assert "(Zeilen 8-8)" in text
    assert "Diese Notiz fasst zusammen" not in text  # carries nothing
    index = IndexEntry.objects.get(root=released, rel_path="brennen.md")
    assert index.zuletzt_gelernt_hash == index.inhalt_hash


@pytest.mark.django_db
def test_a_described_file_is_found_among_the_released_ones(
    zone: Path, released: FileRoot, session: Session, user: Any, nova: Character
) -> None:
    result = run_turn(
        user=user, character=nova, session=session,
        text="Präge dir die Notizen zum Hochbeet ein",
    )  # fmt: skip
    assert result.status == "abgeschlossen", result.reply
    entry = KnowledgeEntry.objects.get(user=user, character=nova)
    assert entry.path == "erarbeitet/hochbeet.md"
    assert "60 cm Abstand" in (zone / f"{user.pk}-{nova.pk}" / entry.path).read_text()

    missing = run_turn(
        user=user, character=nova, session=session,
        text="Präge dir die Notizen zur Steuererklärung ein",
    )  # fmt: skip
    assert "finde ich nicht" in missing.reply
    assert KnowledgeEntry.objects.filter(user=user).count() == 1


@pytest.fixture
def library(folder: Path, user: Any, nova: Character) -> Path:
    written = datei_schreiben(
        user=user, character=nova, path="keramik.md", thema="Keramik brennen",
        inhalt="### Glasuren\n\nGlasuren schmelzen bei 1240 Grad zu einer glasigen Schicht.\n\n"
        "### Kegel\n\nSegerkegel zeigen an, wie viel Hitze wirklich angekommen ist.",
    )  # fmt: skip
    assert written.ok, written
    return folder / "keramik.md"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "question",
    [
        "Was weißt du in deinem Wissen über Glasuren",
        "Was steht in deinem Wissen zu Glasuren?",
        "Was hast du dir über Glasuren gemerkt?",
    ],
)
def test_questions_about_her_library_are_answered_from_it(
    question: str, library: Path, session: Session, user: Any, nova: Character
) -> None:
    result = run_turn(user=user, character=nova, session=session, text=question)
    assert result.status == "abgeschlossen"
    assert "keramik.md, Version 1.0" in result.reply
    assert "1240 Grad" in result.reply


@pytest.mark.django_db
@pytest.mark.parametrize(
    "order",
    [
        "Entferne aus deinem Wissen den Absatz über Kegel",
        "Streich den Absatz über Kegel aus deinem Wissen",
    ],
)
def test_deleting_a_paragraph_in_another_word_order_asks_and_obeys_the_answer(
    order: str, library: Path, session: Session, user: Any, nova: Character
) -> None:
    before = library.read_bytes()
    asked = run_turn(user=user, character=nova, session=session, text=order)
    assert asked.status == "rueckfrage" and asked.question
    assert "Segerkegel zeigen an" in asked.question
    refused = run_turn(user=user, character=nova, session=session, text="nein")
    assert refused.status == "dismissed"
    assert library.read_bytes() == before

    run_turn(user=user, character=nova, session=session, text=order)
    done = run_turn(user=user, character=nova, session=session, text="ja")
    assert done.status == "abgeschlossen", done.reply
    text = library.read_text()
    assert "Segerkegel" not in text and "1240 Grad" in text and "Version: 1.1" in text
    assert PendingQuestion.objects.filter(user=user, status="ausgefuehrt").count() == 1
