"""Degrade node by node (issue 13): a model that babbles, answers empty, in the wrong shape, with
an error or not at all makes each node fall back to its offline implementation, named in the
turn's pipeline log (``ersatz_offline`` and the model's failure) and shown in the inspector.
Nothing executes on a model's word: an order still asks the person first."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from conversation.models import PendingQuestion, PipelineLog, Session, Turn
from conversation.pipeline import fallback
from conversation.pipeline.offline import OFFLINE_NO_CONTENT
from directives.models import Directive
from directives.tests.helpers import is_classify, say
from novaberg.llm import LLMFailure
from tests.chat_requests import is_composer, is_responder, is_router, is_vector, system_prompt
from tests.fakes.openai_server import FakeOpenAI, closed_port_url

pytestmark = pytest.mark.django_db

ORDER = "Sieze mich ab jetzt immer."
QUESTION_END = "Soll ich das so machen?"
BABBLE = "Klar doch! Ab jetzt sieze ich dich, versprochen, ganz bestimmt und immer."

# The fake's failure modes (tests/fakes/openai_server.py) and the model failure each is named.
FAILURES = [
    pytest.param({"text": BABBLE}, "nicht_json", id="babble"),
    pytest.param({"non_json": True}, "nicht_json", id="non-json-page"),
    pytest.param({"wrong_shape": True, "text": "{}"}, "falsche_form", id="wrong-shape"),
    pytest.param({"text": ""}, "leer", id="empty"),
    pytest.param({"status": 500}, "http_fehler", id="http-500"),
]


def logs(turn_id: int) -> dict[str, PipelineLog]:
    return {row.node: row for row in PipelineLog.objects.filter(turn_id=turn_id)}


def assert_fallback(row: PipelineLog, fault: str) -> None:
    assert row.details.get("ersatz_offline") is True, (row.node, row.outcome, row.details)
    assert row.details.get("modellfehler") == fault, row.details


# -- naming the model's failure ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "message", "fault"),
    [
        pytest.param("verbindung", "connection failed", "nicht_erreichbar", id="refused"),
        pytest.param("zeitlimit_erstes_token", "", "zeitueberschreitung", id="first-token"),
        pytest.param("antwort_unlesbar", "no choices in str", "nicht_json", id="html-page"),
        pytest.param("antwort_unlesbar", "empty message content", "leer", id="empty"),
        pytest.param("abgebrochen", "cancelled after 3 tokens", "abgebrochen", id="stop"),
    ],
)
def test_the_gateways_failures_get_their_names(step: str, message: str, fault: str) -> None:
    assert fallback.fault_of(LLMFailure(step, message)) == fault


# -- router -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("script", "fault"), FAILURES)
def test_router_falls_back_to_the_patterns_named(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, script: dict[str, Any], fault: str
) -> None:
    fake_llm.set_default("Gern.")
    fake_llm.add(match=is_router, **script)

    answer = say(api, session, "Mir wären Antworten ohne Emojis lieber.")

    router = logs(answer["turn_id"])["router"]
    assert router.outcome == "gespraech"  # the patterns' verdict
    assert_fallback(router, fault)
    assert not PendingQuestion.objects.exists()


# -- directives classification ----------------------------------------------------------------


@pytest.mark.parametrize(("script", "fault"), FAILURES)
def test_an_order_reaches_its_question_when_the_classifier_model_fails(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, script: dict[str, Any], fault: str
) -> None:
    fake_llm.set_default("Gern.")
    fake_llm.add(match=is_classify, **script)

    answer = say(api, session, ORDER)

    assert answer["status"] == "rueckfrage", answer
    assert answer["question"].endswith(QUESTION_END)
    assert answer["reply"] == answer["question"]
    agent = logs(answer["turn_id"])["agent"]
    assert_fallback(agent, fault)
    assert not Directive.objects.exists()  # asked, not written


def test_a_babbling_model_never_writes_and_no_keeps_it_so(
    fake_llm: FakeOpenAI, api: APIClient, session: Session
) -> None:
    fake_llm.set_default("Gern.")
    fake_llm.add(BABBLE, match=is_classify)

    asked = say(api, session, ORDER)
    assert asked["question"].endswith(QUESTION_END)
    assert not Directive.objects.exists()

    refused = say(api, session, "nein")

    assert refused["status"] == "dismissed"
    assert not Directive.objects.exists()
    assert PendingQuestion.objects.get().status == "dismissed"


def test_a_garbage_answer_that_names_an_action_still_only_asks(
    fake_llm: FakeOpenAI, api: APIClient, session: Session
) -> None:
    # Half an object that would "delete rule 1": unreadable, so the offline classifier reads the
    # person's words; nothing is deleted or created without the person's yes.
    Directive.objects.create(user=session.user, text="Sprich nie von Milch", active=True)
    fake_llm.set_default("Gern.")
    fake_llm.add('{"action": "delete", "target_id": 1, "anweisung": ', match=is_classify)

    answer = say(api, session, ORDER)

    assert answer["status"] == "rueckfrage"
    assert Directive.objects.filter(active=True).count() == 1
    assert Directive.objects.count() == 1


def test_an_unreachable_model_still_asks_and_yes_then_writes(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, settings: Any
) -> None:
    settings.LLM_BASE_URL = closed_port_url()

    asked = say(api, session, ORDER)

    assert asked["question"].endswith(QUESTION_END)
    assert_fallback(logs(asked["turn_id"])["agent"], "nicht_erreichbar")
    assert not Directive.objects.exists()
    done = say(api, session, "ja")
    assert done["status"] == "abgeschlossen"
    assert Directive.objects.filter(active=True).count() == 1


# -- conversation vector ----------------------------------------------------------------------


@pytest.mark.parametrize(("script", "fault"), FAILURES)
def test_vector_falls_back_to_the_rules_named(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, script: dict[str, Any], fault: str
) -> None:
    fake_llm.set_default("Schön.")
    fake_llm.add(match=is_vector, **script)

    answer = say(api, session, "Wie war dein Tag?")

    row = logs(answer["turn_id"])["gespraechsvektor"]
    assert row.outcome == "ersatz_offline"
    assert_fallback(row, fault)
    assert row.details["quelle"] == "regeln"
    assert answer["status"] == "abgeschlossen"


# -- composer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("script", "fault"), FAILURES[1:])  # babble is a valid composer text
def test_composer_falls_back_to_offline_content_and_the_responder_voices_it(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, script: dict[str, Any], fault: str
) -> None:
    fake_llm.set_default("Schön.")
    fake_llm.add(match=is_composer, **script)
    fake_llm.add("Ich bin gerade ohne Sprachmodell da.", match=is_responder)

    answer = say(api, session, "Mein Hund heißt Bello.")

    assert answer["status"] == "abgeschlossen"
    assert answer["reply"] == "Ich bin gerade ohne Sprachmodell da."
    row = logs(answer["turn_id"])["composer"]
    assert row.outcome == "ersatz_offline"
    assert_fallback(row, fault)
    # Composer before responder: the responder was given the offline content.
    responder = [r for r in fake_llm.chat_requests() if is_responder(r)]
    assert len(responder) == 1
    assert OFFLINE_NO_CONTENT in system_prompt(responder[0])
    assert Turn.objects.get(pk=answer["turn_id"]).composer_text == OFFLINE_NO_CONTENT


# -- responder --------------------------------------------------------------------------------

CONTENT = "Bello ist ein schöner Name für einen Hund."
# issue 27: a model that gave no answer at all is named before the offline voice.
NO_ANSWER = "Das Sprachmodell hat nicht geantwortet; hier meine Antwort im Offline-Modus:\n\n"
UNREACHABLE = "Das Sprachmodell ist nicht erreichbar; hier meine Antwort im Offline-Modus:\n\n"
RESPONDER_FAILURES = [
    pytest.param({"status": 500}, "http_fehler", "", id="http-500"),
    pytest.param({"text": ""}, "leer", "", id="empty"),
    pytest.param({"wrong_shape": True, "text": "x"}, "falsche_form", "", id="wrong-shape"),
    pytest.param(
        {"text": "spät", "first_token_delay_s": 3.0},
        "zeitueberschreitung",
        NO_ANSWER,
        id="no-first-token",
    ),
]


@pytest.mark.parametrize(("script", "fault", "said"), RESPONDER_FAILURES)
def test_responder_failure_before_any_word_sends_the_offline_voice(
    fake_llm: FakeOpenAI,
    api: APIClient,
    session: Session,
    settings: Any,
    script: dict[str, Any],
    fault: str,
    said: str,
) -> None:
    settings.LLM_FIRST_TOKEN_S = 0.5
    fake_llm.set_default("Schön.")
    fake_llm.add(CONTENT, match=is_composer)
    fake_llm.add(match=is_responder, **script)

    answer = say(api, session, "Mein Hund heißt Bello.")

    assert answer["status"] == "abgeschlossen"
    assert answer["reply"] == said + CONTENT  # the offline voice says the content as it is
    assert "nicht erreichbar" not in answer["reply"]
    row = logs(answer["turn_id"])["responder"]
    assert row.outcome == "ersatz_offline"
    assert_fallback(row, fault)
    assert Turn.objects.get(pk=answer["turn_id"]).deviation == 0.0


# -- the whole turn with the model down --------------------------------------------------------


def test_model_down_for_the_whole_turn_asks_it_once_and_answers_offline(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, settings: Any
) -> None:
    settings.LLM_BASE_URL = closed_port_url()

    answer = say(api, session, "Mein Hund heißt Bello.")

    assert answer["status"] == "abgeschlossen"
    assert answer["reply"] == UNREACHABLE + OFFLINE_NO_CONTENT
    rows = logs(answer["turn_id"])
    # Found down by the router's call (every message is put to the model, issue 28): the later
    # nodes do not wait for it again.
    assert_fallback(rows["router"], "nicht_erreichbar")
    assert_fallback(rows["gespraechsvektor"], "im_turn_ausgefallen")
    assert_fallback(rows["composer"], "im_turn_ausgefallen")
    assert_fallback(rows["responder"], "im_turn_ausgefallen")
    assert rows["gedaechtnis"].outcome == "gespeichert"


def test_model_timed_out_earlier_in_the_turn_the_tribunal_does_not_wait_for_it_again(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, settings: Any
) -> None:
    """Found against llama.cpp: after the vector call ran into its deadline, the tribunal still
    asked the model for its verdict and the person waited for it once more."""
    from directives import services

    services.directive_create(user=session.user, text="Sprich nie von Milch")
    settings.LLM_TOTAL_S = 0.5
    fake_llm.add("{}", match=is_vector, delay_s=3.0)
    fake_llm.set_default("Gern.")

    answer = say(api, session, "Mein Hund heißt Bello.")

    rows = logs(answer["turn_id"])
    assert_fallback(rows["gespraechsvektor"], "zeitueberschreitung")
    # The offline checks decided at once, named as the fallback they are.
    assert rows["tribunal"].outcome == "ersatz_offline"
    asked_tribunal = [
        body for body in fake_llm.chat_requests() if "Pruefe ob die Antwort" in system_prompt(body)
    ]
    assert asked_tribunal == []


# -- the inspector -----------------------------------------------------------------------------


def test_the_inspector_shows_the_fallback_plainly_with_german_names(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, user: Any
) -> None:
    fake_llm.set_default("Schön.")
    fake_llm.add(BABBLE, match=is_vector)
    answer = say(api, session, "Wie war dein Tag?")

    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/turns/{answer['turn_id']}/").content.decode()

    assert "Ersatz: Offline-Modus — Modell antwortete nicht lesbar" in page
    assert 'data-fallback="gespraechsvektor"' in page
    assert 'id="fallbacks"' in page
    # German names with the technical name beside them.
    assert "Verfasser (Inhalt)" in page and '<code class="tech">composer</code>' in page
    assert "Antwort (Novas Stimme)" in page and '<code class="tech">responder</code>' in page
    # The checks as a table, the deviation explained in a sentence.
    assert '<table class="checks" id="checks">' in page
    assert 'data-check="abweichung"' in page
    assert "Anteil der Inhaltswörter der Antwort" in page


def test_a_turn_without_fallback_shows_none(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, user: Any
) -> None:
    fake_llm.set_default("Schön.")
    fake_llm.add('{"ziel": "gespraech", "aktion": ""}', match=is_router)
    fake_llm.add(
        '{"strategie": "vertiefen", "absicht": "social", "vehikel": "frage", '
        '"impuls": "Der Nutzer fragt nach meinem Tag."}',
        match=is_vector,
    )
    answer = say(api, session, "Wie war dein Tag?")

    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/turns/{answer['turn_id']}/").content.decode()

    assert "Ersatz: Offline-Modus" not in page
    assert not any(row.details.get("ersatz_offline") for row in logs(answer["turn_id"]).values())
