"""The header badge shows the model's real state — erreichbar / langsam / nicht erreichbar —
from the recent call outcomes and the last probe (/healthz, GET /api/llm/status/); the model's
address only to staff; "Offline-Modus" without a model (issue 13)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from conversation.models import Session
from novaberg import health, llm, llm_state
from novaberg.llm_state import ModelState, Outcome, state_of
from tests.fakes.openai_server import FakeOpenAI, closed_port_url

pytestmark = pytest.mark.django_db

MESSAGES = [{"role": "user", "content": "Hallo"}]
BADGE = re.compile(r'data-state="([a-z_]+)"[^>]*id="backend-label" >([^<]*)')


def _badge(user: Any, url: str = "/chat/") -> tuple[str, str, str]:
    browser = Client()
    browser.force_login(user)
    page = browser.get(url, follow=True).content.decode()
    found = BADGE.search(page)
    assert found is not None, page[:2000]
    return found.group(1), found.group(2), page


def _status(api: APIClient) -> dict[str, Any]:
    answer = api.get("/api/llm/status/")
    assert answer.status_code == 200, answer.content
    return dict(answer.json())


def _at(
    outcome: str,
    ms: int = 100,
    limit_ms: int = 10_000,
    purpose: str = "composer",
    answered: bool = True,
) -> Outcome:
    return Outcome(
        at=0.0, purpose=purpose, outcome=outcome, ms=ms, limit_ms=limit_ms, answered=answered
    )


def _silent(outcome: str = "zeitlimit_antwort") -> Outcome:
    """A call that timed out before the model sent anything."""
    return _at(outcome, ms=10_000, answered=False)


@pytest.mark.parametrize(
    ("newest_first", "state"),
    [
        pytest.param([], ModelState.UNKNOWN, id="nothing-known"),
        pytest.param([_at("ok")], ModelState.REACHABLE, id="one-quick-answer"),
        pytest.param([_at("verbindung"), _at("ok")], ModelState.UNREACHABLE, id="refused-now"),
        pytest.param([_at("http_fehler")], ModelState.UNREACHABLE, id="500-now"),
        pytest.param([_at("ok"), _at("verbindung")], ModelState.REACHABLE, id="back-again"),
        pytest.param([_at("ok", ms=6000)], ModelState.SLOW, id="over-half-its-deadline"),
        pytest.param([_at("ok"), _at("zeitlimit_erstes_token")], ModelState.SLOW, id="timed-out"),
        pytest.param(
            [_at("ok")] * 5 + [_at("zeitueberschreitung")], ModelState.REACHABLE, id="long-ago"
        ),
        pytest.param([_at("antwort_unlesbar")], ModelState.REACHABLE, id="babbles-but-answers"),
        # issue 27: no answer at all within the deadline is not "slow".
        pytest.param([_silent()], ModelState.UNREACHABLE, id="no-answer-at-all"),
        pytest.param(
            [_silent("zeitlimit_erstes_token")], ModelState.UNREACHABLE, id="no-first-token"
        ),
        pytest.param(
            [_at("ok", purpose="probe"), _silent()],
            ModelState.UNREACHABLE,
            id="lists-its-models-but-does-not-answer",
        ),
        pytest.param([_at("zeitlimit_antwort")], ModelState.SLOW, id="answered-past-deadline"),
        pytest.param([_at("ok"), _silent()], ModelState.SLOW, id="answers-again"),
    ],
)
def test_the_state_is_read_from_the_newest_outcomes(
    newest_first: list[Outcome], state: ModelState
) -> None:
    assert state_of(newest_first) == state


def test_offline_backend_shows_offline_mode(user: Any, api: APIClient) -> None:
    state, label, _ = _badge(user)
    assert (state, label) == ("offline", "Offline-Modus")
    assert _status(api) == {
        "state": "offline",
        "label": "Offline-Modus",
        "sentence": llm_state.SENTENCES[ModelState.OFFLINE],
        "offline": True,
        "address": "",
    }


def test_a_model_that_answered_is_reachable_and_its_address_is_for_staff_only(
    fake_llm: FakeOpenAI, user: Any, session: Session
) -> None:
    fake_llm.add("Hallo zurück.")
    assert llm.get_gateway().chat(MESSAGES, purpose="composer").ok

    state, label, page = _badge(user, f"/chat/{session.pk}/")
    assert (state, label) == ("erreichbar", "Sprachmodell erreichbar")
    assert "fake-model" not in page and "127.0.0.1" not in page

    user.is_staff = True
    user.save(update_fields=["is_staff"])
    _, _, staff_page = _badge(user, f"/chat/{session.pk}/")
    host = fake_llm.base_url.split("//")[1].split("/")[0]
    assert f'<span class="dev-only">: fake-model @ {host}</span>' in staff_page


def test_an_unreachable_model_is_shown_so_after_the_probe(
    fake_llm: FakeOpenAI, user: Any, api: APIClient, settings: Any
) -> None:
    settings.LLM_BASE_URL = closed_port_url()
    llm.reset_gateway()

    status = _status(api)  # nothing known yet: the endpoint probes

    assert status["state"] == "nicht_erreichbar"
    assert status["label"] == "Sprachmodell nicht erreichbar"
    assert status["address"] == ""  # not staff
    state, label, _ = _badge(user)
    assert (state, label) == ("nicht_erreichbar", "Sprachmodell nicht erreichbar")


def test_healthz_probe_feeds_the_badge(fake_llm: FakeOpenAI, user: Any, settings: Any) -> None:
    settings.LLM_BASE_URL = closed_port_url()
    llm.reset_gateway()
    assert _badge(user)[0] == "ungeprueft"

    # /healthz's LLM check (only that one: the whole page warms the embedding model up).
    assert health._llm().startswith("nicht erreichbar")

    assert _badge(user)[0] == "nicht_erreichbar"


def test_a_slow_answer_makes_the_badge_slow(fake_llm: FakeOpenAI, user: Any, settings: Any) -> None:
    # The responder may spend 2 s here; its first word comes at once and the rest over 2 s, so
    # the answer used more than half of its time (and one that runs past its deadline on a busy
    # machine answered all the same: slow as well, never "nicht erreichbar").
    settings.LLM_TOTAL_S = 2.0
    fake_llm.add("Endlich bin ich mit allem fertig.", chunk_delay_s=0.4)

    events = list(llm.get_gateway().stream(MESSAGES, purpose="responder"))
    assert events[0].kind == "token"

    state, label, _ = _badge(user)
    assert (state, label) == ("langsam", "Sprachmodell langsam")


def test_the_status_endpoint_needs_a_login() -> None:
    answer = APIClient().get("/api/llm/status/")
    assert answer.status_code in (401, 403)
    assert "detail" in answer.json()


NO_ANSWER = "Das Sprachmodell hat nicht geantwortet; hier meine Antwort im Offline-Modus:"


def test_a_model_that_never_answers_is_named_in_the_reply_and_the_badge(
    fake_llm: FakeOpenAI, user: Any, api: APIClient, session: Session, settings: Any
) -> None:
    """issue 27: with a model server that takes every request and never answers, the turn ends
    within its deadline, the reply says the model did not answer, and the badge says "nicht
    erreichbar" — also after a probe, because the server still lists its models."""
    settings.LLM_TOTAL_S = 1.0  # every call's deadline
    fake_llm.add("Zu spät.", first_token_delay_s=60.0, times=20)

    answer = api.post(
        f"/api/sessions/{session.pk}/messages/", {"text": "Mein Hund heißt Bello."}, format="json"
    )

    assert answer.status_code == 200, answer.content
    reply = answer.json()["reply"]
    assert reply.startswith(NO_ANSWER + "\n\n"), reply
    assert reply.removeprefix(NO_ANSWER).strip()  # the offline answer follows
    assert _status(api)["state"] == "nicht_erreichbar"
    assert llm.ping()  # GET /v1/models still answers
    status = _status(api)
    assert (status["state"], status["label"]) == (
        "nicht_erreichbar",
        "Sprachmodell nicht erreichbar",
    )
    state, label, _ = _badge(user, f"/chat/{session.pk}/")
    assert (state, label) == ("nicht_erreichbar", "Sprachmodell nicht erreichbar")
