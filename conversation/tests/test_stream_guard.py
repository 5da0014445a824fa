"""The sentence guard (seed 000 §8.3): what the person receives over ``on_token`` keeps the
directives sentence by sentence — the form of address rewritten, a forbidden term withheld and
the rest regenerated once — and the stored reply is what the person saw."""

from __future__ import annotations

import re
from typing import Any

import pytest

from conversation.address import AddressForm
from conversation.models import Session, Turn
from conversation.pipeline import run_turn
from conversation.pipeline.stream_guard import SentenceGuard
from tests.chat_requests import is_responder
from tests.fakes.openai_server import FakeOpenAI
from tests.fixtures import token_client

pytestmark = pytest.mark.django_db

# Nova's du-forms, spelled out here (not the guard's own reader), on the text as received.
DU = re.compile(r"\b(du|dich|dir|dein|deine|deinen|deinem|deiner|deines)\b", re.IGNORECASE)
REGENERATION = "Deine Antwort"


def rule(user: Any, text: str) -> None:
    """A standing rule of the person, through the directives API (conversation's tests import
    no plug-in app)."""
    response = token_client(user).post("/api/directives/", {"text": text}, format="json")
    assert response.status_code == 201, response.content


def is_first_reply(body: dict[str, Any]) -> bool:
    return is_responder(body) and len(body["messages"]) == 2


def is_regeneration(body: dict[str, Any]) -> bool:
    last = str(body["messages"][-1]["content"])
    return is_responder(body) and last.startswith(REGENERATION)


def turn(session: Session, user: Any, text: str) -> tuple[str, Any]:
    received: list[str] = []
    result = run_turn(
        user=user, character=session.character, session=session, text=text, on_token=received.append
    )
    return "".join(received), result


def checks_of(result: Any) -> dict[str, Any]:
    return Turn.objects.get(pk=result.turn_id).checks


def test_with_sieze_mich_a_du_reply_reaches_the_person_in_sie_form(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    rule(user, "Sieze mich immer")
    said = "Hallo! Wie geht es dir heute? Ich habe deine Notiz gelesen. Schön, dass du da bist."
    fake_llm.add(said, match=is_first_reply)

    received, result = turn(session, user, "Hallo Nova")

    assert not DU.search(received), received
    assert "Wie geht es Ihnen heute?" in received
    assert "Ich habe Ihre Notiz gelesen." in received
    assert "Schön, dass Sie da sind." in received
    # What is stored is what the person saw; the model's own words are kept beside it.
    assert result.reply == received.strip()
    assert Turn.objects.get(reply_to_id=result.turn_id).text == received.strip()
    guard = checks_of(result)["waechter"]
    assert guard["original"] == said
    assert {"vorher": "Wie geht es dir heute?", "nachher": "Wie geht es Ihnen heute?"} in guard[
        "umgeschrieben"
    ]


def test_no_prefix_of_the_stream_ever_holds_a_du_sentence(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    rule(user, "Sieze mich immer")
    fake_llm.add(
        "Kannst du mir sagen, wie dein Tag war? Ich höre dir gern zu.", match=is_first_reply
    )

    received: list[str] = []
    prefixes: list[str] = []

    def on_token(text: str) -> None:
        received.append(text)
        prefixes.append("".join(received))

    run_turn(user=user, character=session.character, session=session, text="Hi", on_token=on_token)
    assert prefixes, "nothing reached the person"
    assert not [p for p in prefixes if DU.search(p)]
    assert "Können Sie mir sagen, wie Ihr Tag war?" in prefixes[-1]


def test_a_milch_sentence_never_reaches_the_person_and_the_rest_is_regenerated_once(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    rule(user, "Sprich nie von Milch")
    fake_llm.add(
        "Guten Morgen. Milch im Kaffee ist lecker. Er wird davon ganz mild.", match=is_first_reply
    )
    fake_llm.add("Ein Tee wäre heute auch schön.", match=is_regeneration)

    received, result = turn(session, user, "Was trinke ich heute?")

    assert "milch" not in received.lower()
    assert received.startswith("Guten Morgen.")
    assert "Ein Tee wäre heute auch schön." in received
    # The original's rest stood on the withheld sentence; the continuation replaced it.
    assert "Er wird davon ganz mild." not in received
    responder_calls = [r for r in fake_llm.chat_requests() if is_responder(r)]
    assert len(responder_calls) == 2
    regeneration = responder_calls[1]["messages"]
    assert regeneration[-2] == {"role": "assistant", "content": "Guten Morgen."}
    assert "„Sprich nie von Milch“" in regeneration[-1]["content"]
    guard = checks_of(result)["waechter"]
    assert guard["zurueckgehalten"][0]["satz"] == "Milch im Kaffee ist lecker."
    assert guard["neu_erzeugt"]["outcome"] == "ok"
    assert "Milch im Kaffee" in guard["original"]
    assert "milch" not in Turn.objects.get(reply_to_id=result.turn_id).text.lower()


def test_a_regeneration_that_violates_again_is_left_out_and_not_tried_a_third_time(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    rule(user, "Sprich nie von Milch")
    fake_llm.add("Guten Morgen. Milch ist gesund.", match=is_first_reply)
    fake_llm.add("Milch bleibt trotzdem gesund.", match=is_regeneration, times=3)

    received, result = turn(session, user, "Was trinke ich heute?")

    assert "milch" not in received.lower()
    assert received.strip() == "Guten Morgen."
    assert len([r for r in fake_llm.chat_requests() if is_responder(r)]) == 2
    assert checks_of(result)["waechter"]["neu_erzeugt"]["outcome"] == "wieder_verstoss"


def test_a_failed_regeneration_sends_the_clean_rest_of_the_original(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    rule(user, "Sprich nie von Milch")
    fake_llm.add("Guten Morgen. Milch ist gesund. Bis später.", match=is_first_reply)
    fake_llm.add(status=500, match=is_regeneration)

    received, result = turn(session, user, "Was trinke ich heute?")

    assert "milch" not in received.lower()
    assert "Guten Morgen." in received and "Bis später." in received
    assert checks_of(result)["waechter"]["neu_erzeugt"]["outcome"] == "fehler"


def test_when_everything_is_withheld_the_person_still_gets_a_sentence(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    rule(user, "Sieze mich immer")
    rule(user, "Sprich nie von Milch")
    fake_llm.add("Milch ist gesund.", match=is_first_reply)
    fake_llm.add("Milch, Milch, Milch.", match=is_regeneration)

    received, result = turn(session, user, "Was trinke ich heute?")

    assert (
        received
        == "Dazu sage ich lieber nichts – meine Antwort hätte gegen eine Ihrer Regeln verstoßen."
    )
    assert result.reply == received


def test_with_duze_mich_a_sie_sentence_is_rewritten_to_du() -> None:
    sent: list[str] = []
    guard = SentenceGuard(form=AddressForm.DU, terms=[], emit=sent.append)
    for token in ["Können ", "Sie ", "mir ", "helfen? ", "Danke ", "Ihnen."]:
        guard.feed(token)
    guard.close()
    assert "".join(sent) == "Kannst du mir helfen? Danke dir."


def test_quoted_rules_and_paths_are_not_nova_addressing_anyone() -> None:
    sent: list[str] = []
    guard = SentenceGuard(form=AddressForm.SIE, terms=[], emit=sent.append)
    guard.feed("Ihre Regel „Nenn mich nie du“ gilt. Sie steht in /home/du/regeln.md. ")
    guard.close()
    assert "".join(sent) == "Ihre Regel „Nenn mich nie du“ gilt. Sie steht in /home/du/regeln.md. "
    assert not guard.withheld and not guard.rewritten


def test_naming_the_rule_itself_is_not_breaking_it() -> None:
    sent: list[str] = []
    guard = SentenceGuard(form=None, terms=[("Sprich nie von Milch", "Milch")], emit=sent.append)
    guard.feed("Das sind die Direktiven, an die ich mich halte:\n1. Sprich nie von Milch\n")
    guard.feed("Milch mag ich trotzdem. ")
    guard.close()
    assert (
        "".join(sent)
        == "Das sind die Direktiven, an die ich mich halte:\n1. Sprich nie von Milch\n"
    )
    assert [w["satz"] for w in guard.withheld] == ["Milch mag ich trotzdem."]


def test_offline_the_person_can_still_read_her_rules(session: Session, user: Any) -> None:
    rule(user, "Sprich nie von Milch")
    rule(user, "Sieze mich immer")

    received, result = turn(session, user, "Welche Regeln hast du?")

    assert "Sprich nie von Milch" in received
    assert "Sieze mich immer" in received
    assert not DU.search(received.replace("Sprich nie von Milch", "")), received
    assert result.note is None
