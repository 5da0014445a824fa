"""The composer's prompt as seed 003 §2.2 lays it out, through the fake model: its blocks in
order with their contents for a question about released files, a task, a doubtful claim and a
spontaneous earlier turn; one naming system throughout ("Nova" and "der Nutzer")."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from conversation import context
from conversation.models import MemoryEntry, PipelineLog, Session, Turn
from conversation.pipeline import run_turn
from directives.tribunal import TribunalResult
from files.retrieval import RetrievalResult
from novaberg import embeddings
from tests.fakes.openai_server import FakeOpenAI
from tests.records import RECORD

pytestmark = pytest.mark.django_db

# The forms of the other naming systems (seed 003 §2.2 names their mixing as a defect).
OTHER_FORMS = re.compile(
    r"Person [AB]\b|^Person:|\b[Dd]ie Person\b|\bdieser Person\b|\bdir\b|\bdich\b|\bdein\w*\b|"
    r"\bDein\w*\b",
    re.M,
)


def vector(intent: str, strategy: str, impulse: str) -> str:
    return json.dumps(
        {"strategie": strategy, "absicht": intent, "vehikel": "aussage", "impuls": impulse}
    )


def starts(marker: str) -> Callable[[dict], bool]:
    return lambda body: body["messages"][0]["content"].startswith(marker)


is_vector = starts("[GESPRAECHSVEKTOR-ANALYSE]")
is_composer = starts("[VERFASSER]")
is_responder = starts("[IDENTITAET]")
is_doubt = starts("[SACHLAGE-ZWEIFEL]")


@pytest.fixture(autouse=True)
def directives_stub(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("directives.blocks.directives_block", lambda *, user: "")
    monkeypatch.setattr(
        "directives.tribunal.review", lambda *, user, reply: TribunalResult("keine_direktiven")
    )


@pytest.fixture
def records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "files.retrieval.records_for_turn",
        lambda **kw: RetrievalResult(records=[dict(RECORD)], log={"hits": 1}),
    )


def composer_prompt(fake: FakeOpenAI) -> tuple[str, str]:
    found = [r for r in fake.chat_requests() if is_composer(r)]
    assert len(found) == 1, len(found)
    return found[0]["messages"][0]["content"], found[0]["messages"][-1]["content"]


def blocks_of(system: str) -> list[tuple[str, str]]:
    """(name, text) of each block, in prompt order: a block opens with its header on its own
    line (the instruction may name blocks inside a line)."""
    heads = list(re.finditer(r"^\[([A-Z_ -]+)\]$", system, re.M))
    return [
        (m.group(1), system[m.end() : heads[i + 1].start() if i + 1 < len(heads) else None])
        for i, m in enumerate(heads)
    ]


def block(system: str, name: str) -> str:
    found = [text for n, text in blocks_of(system) if n == name]
    assert len(found) == 1, (name, [n for n, _ in blocks_of(system)])
    return found[0]


def order(system: str) -> list[str]:
    return [name for name, _ in blocks_of(system)]


def assert_one_naming_system(system: str, user_message: str) -> None:
    """Conversation's own blocks and the composer's user message speak of "Nova" and "der
    Nutzer" only. Quoted words („…“) are data or Nova's own speech acts, and the text of a
    history line is what was said; only its speaker counts."""
    contributed = {s.block for s in context.composer_sources()}
    for name, text in [*blocks_of(system), ("NACHRICHT", user_message)]:
        if name in contributed:
            continue
        if name == "GESPRAECHSVERLAUF":
            for line in text.strip().splitlines()[0:]:
                if line.startswith("("):
                    continue
                assert re.match(r"^(Nutzer|Nova|Nova \(von sich aus\)): ", line), line
            continue
        unquoted = re.sub(r"„[^“]*“", "„…“", text)
        assert not OTHER_FORMS.search(unquoted), (name, OTHER_FORMS.findall(unquoted), unquoted)
    assert "Nutzer" in system


def remember(session: Session, user: User, text: str) -> MemoryEntry:
    return MemoryEntry.objects.create(
        user=user,
        character=session.character,
        kind="lzg",
        text=text,
        embedding=embeddings.embed_one(text),
        salience=0.6,
    )


def composer_row(turn_id: int) -> PipelineLog:
    return PipelineLog.objects.get(turn_id=turn_id, node="composer")


def test_question_about_released_files(
    fake_llm: FakeOpenAI, session: Session, user: User, records: None
) -> None:
    fake_llm.add(
        vector("knowledge", "informieren", "Der Nutzer fragt nach einem Termin."), match=is_vector
    )
    text = "Wann ist der Termin mit dem Architekten Brenner?"
    result = run_turn(user=user, character=session.character, session=session, text=text)

    system, message = composer_prompt(fake_llm)
    names = order(system)
    assert names[0] == "VERFASSER"
    assert names.index("AUFZEICHNUNGEN") < names.index("SACHLAGE")
    assert names.index("SACHLAGE") < names.index("GESPRAECHSVEKTOR")
    assert names.index("GESPRAECHSVEKTOR") < names.index("GESPRAECHSVERLAUF")
    assert names[-1] == "GESPRAECHSVERLAUF"
    situation = block(system, "SACHLAGE").strip().splitlines()
    assert situation[0] == "Gegenstand: Termin, Architekten, Brenner"
    assert situation[1] == "Vermutetes Ziel: Der Nutzer will etwas wissen."
    assert "Offen zu Termin, Architekten, Brenner: Zeitpunkt" in situation
    assert (
        "Dazu hat Nova Aufzeichnungen (aus den Aufzeichnungen, notizen/hausbau.md:3-7 — "
        "Aufzeichnung, nicht ihr Wissen): „Donnerstag 14 Uhr: Architekt Brenner, Baustelle "
        "Lindenweg.“"
    ) in situation
    assert (
        "Der Nutzer will zu Termin, Architekten, Brenner wissen: „" + text + "“ — beantworte es"
    ) in situation
    assert message == f"Der Nutzer schreibt jetzt: {text}"
    assert_one_naming_system(system, message)
    assert composer_row(result.turn_id).details["sachlage"]["outcome"] == "geschrieben"


def test_task_puts_bitte_zuerst_in_the_vector_not_the_situation(
    fake_llm: FakeOpenAI, session: Session, user: User
) -> None:
    fake_llm.add(vector("task", "erledigen", "Der Nutzer möchte ein Rezept."), match=is_vector)
    text = "Kannst du mir ein Rezept für Apfelkuchen aufschreiben?"
    result = run_turn(user=user, character=session.character, session=session, text=text)

    system, message = composer_prompt(fake_llm)
    names = order(system)
    assert (
        names.index("SACHLAGE") < names.index("GESPRAECHSVEKTOR") < names.index("GESPRAECHSVERLAUF")
    )
    situation = block(system, "SACHLAGE")
    assert "Gegenstand: Rezept, Apfelkuchen" in situation
    assert "Vermutetes Ziel: Der Nutzer hat um etwas Konkretes gebeten." in situation
    assert "zuerst" not in situation
    moves = block(system, "GESPRAECHSVEKTOR").strip().splitlines()
    assert moves[0] == "Strategie: erledigen · Absicht: task · Vehikel: aussage"
    # first the request, then the guiding thought and its protection (seed 003 §2.2, §2.4)
    assert moves[1].startswith("Der Nutzer hat um etwas Konkretes gebeten. Nova liefert es zuerst")
    assert moves[2] == "Novas Leitgedanke für diese Antwort: Der Nutzer möchte ein Rezept."
    assert moves[3].startswith("Schreibe ihn niemals ab")
    assert_one_naming_system(system, message)
    row = PipelineLog.objects.get(turn_id=result.turn_id, node="gespraechsvektor")
    assert row.details["bitte_zuerst"] is True

    # A question (intent knowledge) carries no such line.
    fake_llm.reset()
    fake_llm.add(vector("knowledge", "informieren", "Der Nutzer fragt."), match=is_vector)
    run_turn(user=user, character=session.character, session=session, text="Wie backt man Brot?")
    system, _ = composer_prompt(fake_llm)
    assert "zuerst" not in block(system, "GESPRAECHSVEKTOR")


def test_doubtful_claim_is_judged_by_the_model_through_the_checked_reader(
    fake_llm: FakeOpenAI, session: Session, user: User
) -> None:
    memory = remember(session, user, "Der Termin mit Brenner ist am Donnerstag.")
    fake_llm.add(vector("social", "widersprechen", "Der Nutzer nennt einen Tag."), match=is_vector)
    doubt = {"stufe": "hoch", "behauptung": "Termin am Freitag", "grund": "Nova hat Donnerstag"}
    fake_llm.add(json.dumps({"zweifel": [doubt]}), match=is_doubt)
    text = "Der Termin mit Brenner ist am Freitag."
    result = run_turn(user=user, character=session.character, session=session, text=text)

    asked = [r for r in fake_llm.chat_requests() if is_doubt(r)]
    assert len(asked) == 1 and asked[0]["max_tokens"] == 200
    system, message = composer_prompt(fake_llm)
    names = order(system)
    assert names.index("GEDAECHTNIS") < names.index("SACHLAGE") < names.index("GESPRAECHSVEKTOR")
    situation = block(system, "SACHLAGE").strip().splitlines()
    assert situation[0] == "Gegenstand: Termin, Brenner, Freitag"
    known = situation.index(
        "Dazu weiß Nova schon (aus ihrer Erinnerung, Langzeit, "
        f"{memory.created_at.date().isoformat()}): "
        "„Der Termin mit Brenner ist am Donnerstag.“"
    )
    doubt_line = situation.index("Zweifel (hoch): „Termin am Freitag“ — Nova hat Donnerstag")
    assert known < doubt_line
    assert not any("beantworte es" in line for line in situation)  # a claim, not a question
    assert_one_naming_system(system, message)
    details = composer_row(result.turn_id).details["sachlage"]
    assert details["zweifel_quelle"] == "llm"


def test_unreadable_doubt_answer_falls_back_to_the_rules_by_name(
    fake_llm: FakeOpenAI, session: Session, user: User
) -> None:
    remember(session, user, "Der Termin mit Brenner ist am Donnerstag.")
    fake_llm.add("Ja, das klingt plausibel!", match=is_doubt)
    text = "Der Termin mit Brenner ist am Freitag."
    result = run_turn(user=user, character=session.character, session=session, text=text)

    system, _ = composer_prompt(fake_llm)
    situation = block(system, "SACHLAGE")
    assert (
        "Zweifel (mittel): „Der Termin mit Brenner ist am Freitag.“ — wochentag passt nicht; "
        "dazu weiß Nova schon (aus ihrer Erinnerung"
    ) in situation
    details = composer_row(result.turn_id).details["sachlage"]
    assert details["zweifel_quelle"] == "ersatz_regeln_kein_json"


def test_spontaneous_earlier_turn_is_marked_in_the_history(
    fake_llm: FakeOpenAI, session: Session, user: User
) -> None:
    fake_llm.set_default("Schön.")
    Turn.objects.create(
        session=session,
        role=Turn.Role.ASSISTANT,
        text="Mir ist eingefallen: Wie war eigentlich Rom?",
        spontaneous=True,
        status="abgeschlossen",
    )
    run_turn(user=user, character=session.character, session=session, text="Rom war herrlich.")

    system, message = composer_prompt(fake_llm)
    assert order(system)[-1] == "GESPRAECHSVERLAUF"
    history = block(system, "GESPRAECHSVERLAUF").strip().splitlines()
    assert history == ["Nova (von sich aus): Mir ist eingefallen: Wie war eigentlich Rom?"]
    situation = block(system, "SACHLAGE")
    assert "Nova hat schon zu Rom gesagt: „Mir ist eingefallen: Wie war eigentlich Rom?“" in (
        situation
    )
    assert_one_naming_system(system, message)
    responder = [r for r in fake_llm.chat_requests() if is_responder(r)][-1]
    assert "\nNova (von sich aus): Mir ist eingefallen" in responder["messages"][0]["content"]


def test_a_greeting_has_an_empty_situation_logged_as_such(
    fake_llm: FakeOpenAI, session: Session, user: User
) -> None:
    fake_llm.set_default("Hallo!")
    result = run_turn(user=user, character=session.character, session=session, text="Hallo!")
    system, _ = composer_prompt(fake_llm)
    assert "SACHLAGE" not in order(system)
    assert composer_row(result.turn_id).details["sachlage"]["outcome"] == "leer"


def test_a_failing_situation_is_logged_as_not_run_and_the_composer_goes_on(
    fake_llm: FakeOpenAI, session: Session, user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(state: Any) -> Any:
        raise RuntimeError("kaputt")

    monkeypatch.setattr("conversation.pipeline.sachlage.situation", broken)
    fake_llm.set_default("Ok.")
    result = run_turn(
        user=user, character=session.character, session=session, text="Wie geht es Anna?"
    )
    system, _ = composer_prompt(fake_llm)
    assert "SACHLAGE" not in order(system)
    row = composer_row(result.turn_id)
    assert row.outcome == "verfasst"
    assert row.details["sachlage"]["outcome"] == "fehler"
    assert "kaputt" in row.details["sachlage"]["error"]


def test_contributed_records_block_uses_the_same_naming_system(
    fake_llm: FakeOpenAI, session: Session, user: User, records: None
) -> None:
    run_turn(user=user, character=session.character, session=session, text="Wann kommt Brenner?")
    system, _ = composer_prompt(fake_llm)
    text = re.sub(r"„[^“]*“", "„…“", block(system, "AUFZEICHNUNGEN"))
    assert not OTHER_FORMS.search(text), OTHER_FORMS.findall(text)
