"""No 500 from input (issue 27): rule proposals naming unknown or impossible ids, JSON nested
thousands deep (API bodies and WebSocket frames), lone surrogates in choice and text fields.

Every case goes through the real HTTP stack (DRF's test client) or the real consumer
(``WebsocketCommunicator``); the answer is a 4xx with one German sentence, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ValidationError
from rest_framework.test import APIClient

from conversation.models import Character, Session, Turn
from conversation.routing import websocket_urlpatterns
from directives.models import Directive, DirectiveStep
from novaberg.api_errors import exception_handler
from novaberg.parsers import LONE_SURROGATE, MAX_DEPTH, TOO_DEEP, nesting_depth_exceeds
from tests.factories import SessionFactory, UserFactory

BEYOND_BIGINT = 2**63
HUGE = 10**30


def deep(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


def deep_object(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def post_raw(client: APIClient, url: str, body: str, method: str = "post") -> Any:
    client.raise_request_exception = False
    send = getattr(client, method)
    return send(url, data=body.encode("utf-8"), content_type="application/json")


def assert_german_4xx(response: Any) -> dict[str, Any]:
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    body: dict[str, Any] = json.loads(response.content.decode("utf-8"))
    return body


# -- (1) rule proposals with an unknown or impossible directive_id -------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "action", [pytest.param(a, id=a) for a in ("update", "delete", "reactivate")]
)
@pytest.mark.parametrize(
    "directive_id",
    [
        pytest.param(999_999, id="unknown"),
        pytest.param(BEYOND_BIGINT, id="beyond-bigint"),
        pytest.param(HUGE, id="huge"),
        pytest.param(-1, id="negative"),
    ],
)
def test_a_proposal_for_a_rule_that_cannot_exist_is_not_found(
    api: APIClient, session: Session, action: str, directive_id: int
) -> None:
    body = json.dumps({"action": action, "directive_id": directive_id, "text": "Sprich leise"})
    answer = assert_german_4xx(post_raw(api, "/api/directives/proposals/", body))
    reason = answer.get("reason") or json.dumps(answer, ensure_ascii=False)
    assert "Direktive" in reason or "Wert" in reason or "Zahl" in reason, answer
    assert not Directive.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "directive_id",
    [
        pytest.param(999_999, id="unknown"),
        pytest.param(BEYOND_BIGINT, id="beyond-bigint"),
        pytest.param(HUGE, id="huge"),
    ],
)
@pytest.mark.parametrize("action", [pytest.param(a, id=a) for a in ("create", "undo")])
def test_an_id_sent_with_create_or_undo_is_not_recorded_as_their_target(
    api: APIClient, session: Session, action: str, directive_id: int
) -> None:
    # The audit row once took the id as its foreign key: an unknown one failed at commit, one
    # past bigint at the insert — both a 500.
    body = json.dumps({"action": action, "directive_id": directive_id, "text": "Sprich leise"})
    response = post_raw(api, "/api/directives/proposals/", body)
    assert response.status_code in (200, 201), response.content[:300]
    answer = response.json()
    if action == "create":
        assert answer["status"] == "rueckfrage" and "Sprich leise" in answer["question"]
    else:
        assert answer["status"] == "abgeschlossen" and answer["step"] == "nichts_zu_tun"
    steps = DirectiveStep.objects.filter(user=session.user)
    assert steps.exists() and not steps.exclude(directive_id=None).exists()


# -- (2) JSON nested 3,000 deep ------------------------------------------------------------------

DEEP_ENDPOINTS = [
    pytest.param("post", "/api/directives/", id="directives"),
    pytest.param("post", "/api/directives/proposals/", id="proposals"),
    pytest.param("post", "/api/roots/", id="roots"),
    pytest.param("post", "/api/directives/proposals/999/answer/", id="proposal-answer"),
    pytest.param("post", "/api/sessions/{session}/messages/", id="messages"),
    pytest.param("post", "/api/auth/token/", id="token"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "url"), DEEP_ENDPOINTS)
@pytest.mark.parametrize(
    "body",
    [
        pytest.param(deep(3000), id="arrays-3000"),
        pytest.param(deep_object(3000), id="objects-3000"),
        pytest.param('{"text": ' + deep(MAX_DEPTH + 1) + "}", id="just-past-the-limit"),
    ],
)
def test_json_nested_too_deep_is_400_with_a_german_sentence(
    api: APIClient, session: Session, method: str, url: str, body: str
) -> None:
    response = post_raw(api, url.format(session=session.pk), body, method)
    assert response.status_code == 400, response.content[:300]
    assert response.json() == {"detail": TOO_DEEP}
    assert not Turn.objects.exists() and not Directive.objects.exists()


@pytest.mark.django_db
def test_json_at_the_limit_and_brackets_inside_strings_are_read(
    api: APIClient, session: Session
) -> None:
    text = "[" * 300 + "Klammern {{ im Text zählen nicht" + "}" * 10
    response = post_raw(api, "/api/directives/", json.dumps({"text": text}))
    assert response.status_code == 201, response.content[:300]
    assert Directive.objects.get().text == text
    assert not nesting_depth_exceeds(deep(MAX_DEPTH))
    assert nesting_depth_exceeds(deep(MAX_DEPTH + 1))


# -- (3) lone surrogates ---------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "body"),
    [
        pytest.param("/api/roots/", '{"path": "notizen", "eigentum": "\\ud800"}', id="eigentum"),
        pytest.param("/api/directives/proposals/", '{"action": "\\udfff"}', id="action"),
        pytest.param("/api/directives/", '{"text": "Milch \\ud83d"}', id="directive-text"),
        pytest.param("/api/roots/", '{"path": "a\\udc80", "eigentum": "nutzer"}', id="path"),
        pytest.param("/api/sessions/{session}/messages/", '{"text": "\\ud800"}', id="message"),
        pytest.param("/api/directives/", '{"\\ud800": "Sprich leise"}', id="key"),
    ],
)
def test_a_lone_surrogate_is_refused_and_never_repeated(
    api: APIClient, session: Session, url: str, body: str
) -> None:
    response = post_raw(api, url.format(session=session.pk), body)
    assert response.status_code == 400, response.content[:300]
    assert response.json() == {"detail": LONE_SURROGATE}
    assert not Turn.objects.exists() and not Directive.objects.exists()


@pytest.mark.django_db
def test_an_emoji_as_a_surrogate_pair_is_text_not_a_refusal(api: APIClient) -> None:
    body = '{"text": "Sag \\ud83d\\ude00 zur Begr\\u00fc\\u00dfung"}'
    response = post_raw(api, "/api/directives/", body)
    assert response.status_code == 201, response.content[:300]
    assert Directive.objects.get().text == "Sag \U0001f600 zur Begrüßung"


def test_an_error_that_repeats_undecodable_input_still_renders() -> None:
    from rest_framework.renderers import JSONRenderer

    error = ValidationError({"eigentum": ["„\ud800“ ist keine gültige Option."]})
    answer = exception_handler(error, {})
    assert answer is not None and answer.status_code == 400
    rendered = JSONRenderer().render(answer.data).decode("utf-8")
    assert "\ufffd" in rendered and "\\ud800" not in rendered


# -- the WebSocket frame ---------------------------------------------------------------------------

APP = URLRouter(websocket_urlpatterns)  # type: ignore[arg-type]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("frame", "text"),
    [
        pytest.param(deep(3000), TOO_DEEP, id="nested-3000"),
        pytest.param('{"text": ' + deep_object(3000) + "}", TOO_DEEP, id="text-nested-3000"),
        pytest.param('{"text": "Hallo \\ud800"}', LONE_SURROGATE, id="lone-surrogate"),
    ],
)
async def test_a_refused_frame_is_answered_and_the_socket_stays_open(frame: str, text: str) -> None:
    from asgiref.sync import sync_to_async

    def make() -> tuple[Any, Session]:
        nova, _ = Character.objects.get_or_create(
            name="Nova", defaults={"identity": "Eine neugierige, warme Begleiterin."}
        )
        person = UserFactory.create(username="tiefe")
        return person, SessionFactory.create(user=person, character=nova)

    user, session = await sync_to_async(make)()
    comm = WebsocketCommunicator(APP, f"/ws/sessions/{session.pk}/")
    comm.scope["user"] = user  # type: ignore[typeddict-unknown-key]  # AuthMiddleware's key
    assert (await comm.connect())[0]
    try:
        await comm.send_to(text_data=frame)
        assert await comm.receive_json_from(timeout=10) == {"type": "error", "text": text}
        # Still open: the next frame is read and answered.
        await comm.send_json_to({"kein": "text"})
        assert await comm.receive_json_from(timeout=10) == {
            "type": "error",
            "text": "Nachricht ohne Text.",
        }
        assert await comm.receive_nothing(timeout=0.2)
    finally:
        await comm.disconnect()
    stored = await sync_to_async(Turn.objects.filter(session=session).count)()
    # asgiref's thread keeps its connection: closed, or the test database cannot be dropped.
    await sync_to_async(connections.close_all)()
    assert stored == 0


# -- property: nested and surrogate JSON to a few endpoints never gives a 500 ----------------------

# Undecodable text, often: a lone surrogate anywhere a string may stand.
_odd = st.sampled_from(["\ud800", "a\udfffb", "\udc80\ud800", "nutzer\ud800", "create\udc00"])
_scalars = st.one_of(
    _odd,
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=20),
    st.sampled_from(["create", "update", "delete", "undo", "nutzer", "figur"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(_odd, st.text(max_size=3)), inner, max_size=3),
    ),
    max_leaves=8,
)
_fields = st.fixed_dictionaries(
    {},
    optional={
        name: _values
        for name in ("action", "directive_id", "text", "context", "path", "eigentum", "confirm")
    },
)
# Raw text nested up to 3,000 deep (json.dumps itself would recurse), arrays or objects.
_nested = st.builds(
    lambda levels, objects: deep_object(levels) if objects else deep(levels),
    st.integers(min_value=MAX_DEPTH - 2, max_value=3000),
    st.booleans(),
)
_bodies = st.one_of(_fields, _nested)
_endpoints = st.sampled_from(
    [
        "/api/directives/",
        "/api/directives/proposals/",
        "/api/roots/",
        "/api/auth/token/",
    ]
)


def _dumped(body: Any) -> str:
    # ensure_ascii: a lone surrogate becomes the escape "\ud800", as a client would send it.
    return body if isinstance(body, str) else json.dumps(body)


@pytest.mark.django_db
@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(url=_endpoints, body=_bodies)
def test_random_nested_and_surrogate_json_never_gives_a_500(
    api: APIClient, session: Session, url: str, body: Any
) -> None:
    from django.db import transaction

    with transaction.atomic():
        response = post_raw(api, url.format(session=session.pk), _dumped(body))
        assert response.status_code < 500, (url, response.status_code, response.content[:300])
        response.content.decode("utf-8")  # the answer is text
        transaction.set_rollback(True)  # each example starts from the same rows


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        pytest.param("/api/search/?q=%ED%A0%80", id="search-q-surrogate-bytes"),
        pytest.param("/api/search/?q=%FF%FE", id="search-q-invalid-utf8"),
        pytest.param("/api/sessions/?q=%ED%A0%80", id="sessions-q"),
        pytest.param("/api/directives/?active=%ED%A0%80", id="directives-active"),
        pytest.param("/api/roots/1/file/?path=%ED%A0%80&lines=1-2", id="file-path"),
    ],
)
def test_undecodable_bytes_in_a_query_never_give_a_500(
    api: APIClient, session: Session, url: str
) -> None:
    api.raise_request_exception = False
    response = api.get(url)
    assert response.status_code < 500, response.content[:300]
    response.content.decode("utf-8")
