"""A rule exists once: the duplicate check runs again inside the write, under the person's lock,
and the offline similarity looks at what a rule is about, not at how it is phrased."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from conversation.models import Character
from directives import services
from directives.agent.validate import is_similar
from directives.models import Directive
from directives.tests.helpers import say
from tests.factories import SessionFactory, UserFactory
from tests.fixtures import token_client

MILK_QUESTION = "Ich soll die Direktive 'Sprich nie von Milch' anlegen. Soll ich das so machen?"


@pytest.mark.parametrize(
    ("old", "new", "similar"),
    [
        pytest.param("Sprich nie von Milch.", "Sprich nie von Keramik.", False, id="other-object"),
        pytest.param("Nenn mich nie Schatz", "Nenn mich nie Liebling", False, id="other-name"),
        pytest.param("Sieze mich immer", "Duze mich immer", False, id="other-verb-no-object"),
        pytest.param("Sprich nie von Milch.", "Sprich nie wieder von Milch", True, id="wieder"),
        pytest.param("Sprich nie von Milch.", "Erwähne nie Milch", True, id="other-verb"),
        pytest.param("Sprich nie von Milch.", "Rede nicht mehr über Milch", True, id="rede"),
        pytest.param("Nenn mich nie Schatz", "Sag nie Schatz zu mir", True, id="sag-schatz"),
        pytest.param("Benutze keine Emojis", "Verwende nie Emojis", True, id="emojis"),
        pytest.param("Sieze mich immer", "Sieze mich bitte immer", True, id="bitte"),
        pytest.param("Sprich nie von Milch", "Sprich nie von Milch und Käse", True, id="wider"),
    ],
)
def test_similar_means_the_same_object_not_the_same_frame(
    old: str, new: str, similar: bool
) -> None:
    assert is_similar(old, new) is similar
    assert is_similar(new, old) is similar


@pytest.mark.django_db
def test_another_object_of_the_same_verb_is_a_new_rule(
    api: APIClient, session: Any, user: Any
) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch.")

    asked = say(api, session, "Sprich nie von Keramik.")

    # The normal question for a new rule, no offer to replace the milk rule.
    assert asked["question"] == (
        "Ich soll die Direktive 'Sprich nie von Keramik' anlegen. Soll ich das so machen?"
    )
    assert "Milch" not in asked["reply"]
    assert say(api, session, "ja")["status"] == "abgeschlossen"
    texts = set(Directive.objects.filter(user=user, active=True).values_list("text", flat=True))
    assert texts == {"Sprich nie von Milch.", "Sprich nie von Keramik"}


@pytest.mark.django_db
def test_the_same_rule_in_other_words_is_offered_as_a_replacement(
    api: APIClient, session: Any, user: Any
) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch.")

    asked = say(api, session, "Erwähne nie Milch!")

    assert asked["question"] == (
        "Die Direktive 'Sprich nie von Milch.' existiert bereits. "
        "Soll ich sie durch 'Erwähne nie Milch' ersetzen?"
    )


@pytest.mark.django_db
def test_confirmed_in_two_sessions_the_rule_exists_once(
    api: APIClient, nova: Character, user: Any
) -> None:
    first = SessionFactory.create(user=user, character=nova)
    second = SessionFactory.create(user=user, character=nova)
    assert say(api, first, "Sprich nie von Milch.")["question"] == MILK_QUESTION
    assert say(api, second, "Sprich nie von Milch.")["question"] == MILK_QUESTION

    assert say(api, first, "ja")["status"] == "abgeschlossen"
    again = say(api, second, "ja")

    assert again["step"] == "schon_vorhanden"
    assert "Diese Regel gibt es schon" in again["reply"]
    assert "Erledigt" not in again["reply"]
    assert Directive.objects.filter(user=user).count() == 1


@pytest.mark.django_db
def test_the_api_answers_409_for_a_rule_that_exists(api: APIClient, user: Any) -> None:
    assert api.post(
        "/api/directives/", {"text": "Sieze mich immer"}, format="json"
    ).status_code == (201)

    again = api.post("/api/directives/", {"text": "sieze mich immer!"}, format="json")

    assert again.status_code == 409
    assert again.json()["step"] == "schon_vorhanden"
    assert again.json()["reason"] == "Diese Regel gibt es schon: 'Sieze mich immer'."
    assert Directive.objects.filter(user=user).count() == 1


@pytest.mark.django_db
def test_the_409_is_declared_in_the_schema(api: APIClient) -> None:
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "409" in schema["paths"]["/api/directives/"]["post"]["responses"]
    assert "409" in schema["paths"]["/api/directives/{directive_id}/"]["patch"]["responses"]


@pytest.mark.django_db
def test_a_deleted_rule_is_not_reactivated_next_to_its_twin(user: Any) -> None:
    old = services.directive_create(user=user, text="Sag nie Schatz").directive
    assert old is not None
    services.directive_deactivate(user=user, directive_id=old.pk)
    assert services.directive_create(user=user, text="Sag nie Schatz!").ok

    again = services.directive_reactivate(user=user, directive_id=old.pk)

    assert (again.ok, again.step) == (False, "schon_vorhanden")
    assert Directive.objects.filter(user=user, active=True).count() == 1


@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_posts_create_one_rule() -> None:
    user = UserFactory.create(username="anna")
    clients = [token_client(user) for _ in range(10)]
    barrier = threading.Barrier(len(clients))
    codes: list[int] = []
    errors: list[BaseException] = []

    def post(client: APIClient) -> None:
        # Each thread has its own database connection: ten transactions really race.
        try:
            barrier.wait(10)
            answer = client.post(
                "/api/directives/", {"text": "Sprich nie von Milch"}, format="json"
            )
            codes.append(answer.status_code)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert not errors
    assert sorted(codes) == [201] + [409] * 9
    assert Directive.objects.filter(user=user).count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_sessions_racing_their_ja_write_one_rule() -> None:
    """The chat path under a real race: both answers arrive at once on two connections."""
    from conversation import gate
    from conversation.agents import AgentContext
    from directives.agent.agent import DirectivesAgent
    from directives.agent.validate import Proposal

    nova = Character.objects.get(name="Nova")
    user = UserFactory.create(username="anna")
    pending: list[tuple[AgentContext, int]] = []
    for n in range(2):
        session = SessionFactory.create(user=user, character=nova)
        ctx = AgentContext(user=user, character=nova, session=session, text="ja")
        asked = DirectivesAgent()._ask(
            ctx,
            Proposal(
                "create",
                MILK_QUESTION,
                {"action": "create", "request_id": f"race-{n}", "text": "Sprich nie von Milch"},
            ),
        )
        pending.append((ctx, asked.data["pending_id"]))
    barrier = threading.Barrier(2)
    results: list[Any] = []
    errors: list[BaseException] = []

    def answer(ctx: AgentContext, pending_id: int) -> None:
        try:
            barrier.wait(10)
            results.append(gate.resume(ctx, pending_id))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=answer, args=item) for item in pending]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert not errors
    assert sorted(r.step for r in results) == ["ausgefuehrt", "schon_vorhanden"]
    assert Directive.objects.filter(user=user).count() == 1
