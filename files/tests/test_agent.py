"""The five root actions by chat, through the real HTTP stack, the gate and the consent reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from conversation.agents import AgentContext, all_agents
from conversation.models import Character, PendingQuestion, PipelineLog, Session
from files.agent import FilesAgent
from files.agent.classify import classify
from files.models import FileRoot, IndexEntry
from files.tests.watcher_helpers import make_root, small_corpus, write
from files.watcher import index_root_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def rand(tmp_path: Path, settings: Any) -> Path:
    inside = tmp_path / "rand"
    small_corpus(inside / "notizen")
    write(inside / "notizen", ".privat.md", "# privat\n")
    write(inside / "notizen", "foto.jpg", b"\xff\xd8\xff")
    settings.FILES_BOUNDARY = [str(inside)]
    settings.FILES_BASE_DIR = inside
    return inside


def say(api: APIClient, session: Session, text: str) -> dict[str, Any]:
    response = api.post(f"/api/sessions/{session.pk}/messages/", {"text": text}, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()


@pytest.mark.parametrize(
    ("text", "action", "path"),
    [
        pytest.param("Gib Nova den Ordner ~/Notizen frei", "release", "~/Notizen", id="release"),
        pytest.param("Welche Ordner hast du?", "list", "", id="list"),
        pytest.param("Leg den Ordner Notizen still", "suspend", "Notizen", id="suspend"),
        pytest.param("Vergiss den Ordner Notizen", "forget", "Notizen", id="forget"),
        pytest.param(
            "Nimm den Ordner Notizen wieder auf", "reactivate", "Notizen", id="reactivate"
        ),
        pytest.param(
            'Gib den Ordner "/srv/Meine Notizen" frei.',
            "release",
            "/srv/Meine Notizen",
            id="quoted-path",
        ),  # fmt: skip
    ],
)
def test_orders_are_classified(text: str, action: str, path: str) -> None:
    order = classify(text)
    assert order is not None and (order.action, order.path) == (action, path)


@pytest.mark.parametrize(
    "text",
    [
        "Was steht in meinen Notizen über Tee?",
        "Vergiss nie, mich zu siezen.",
        "Gib mir Bescheid, wenn du frei bist.",
        "Wie geht es dir?",
    ],
)
def test_content_questions_and_other_talk_are_not_orders(text: str) -> None:
    assert classify(text) is None


def test_files_agent_is_asked_before_the_directives_agent() -> None:
    # "Gib Nova den Ordner … frei" also reads like an order; the files agent must see it first.
    # (The knowledge agent may stand before both: it only takes orders naming her own library.)
    names = [a.name for a in all_agents()]
    assert names.index("files") < names.index("directives")


def test_release_by_chat_shows_resolved_path_and_count_then_asks_owner_then_confirms(
    api: APIClient, session: Session, rand: Path
) -> None:
    first = say(api, session, "Gib Nova den Ordner ../rand/./notizen frei")
    assert first["status"] == "rueckfrage"
    question = first["question"]
    resolved = str(rand / "notizen")
    assert f"Ordner {resolved}: 4 Dateien würde ich lesen" in question
    assert "übersprungen: 1 Format nicht lesbar, 1 verborgen" in question
    assert question.endswith("Gehören die Dateien dir oder sind sie Novas eigenes Material? "
                             "Antworte mit „meine“ oder „Novas“.")  # fmt: skip
    assert not FileRoot.objects.exists()  # nothing written before consent
    unclear = say(api, session, "hm, vielleicht")
    assert unclear["status"] == "rueckfrage" and unclear["question"] == question
    second = say(api, session, "meine")
    assert second["status"] == "rueckfrage"
    assert second["question"].startswith(f"Soll ich {resolved} als dein Material freigeben?")
    assert not FileRoot.objects.exists()
    done = say(api, session, "ja")
    assert done["status"] == "abgeschlossen"
    root = FileRoot.objects.get()
    assert (root.path, root.eigentum, root.state) == (resolved, "nutzer", "aktiv")
    assert root.file_count_at_release == 4 and root.character == session.character


def test_release_as_novas_material(api: APIClient, session: Session, rand: Path) -> None:
    say(api, session, "Gib Nova den Ordner notizen frei")
    say(api, session, "Novas")
    say(api, session, "ja")
    assert FileRoot.objects.get().eigentum == "figur"


@pytest.mark.parametrize("when", ["owner", "confirm"])
def test_release_refused(api: APIClient, session: Session, rand: Path, when: str) -> None:
    say(api, session, "Gib Nova den Ordner notizen frei")
    if when == "confirm":
        say(api, session, "meine")
    refused = say(api, session, "nein")
    assert refused["status"] == "dismissed"
    assert not FileRoot.objects.exists()


def test_release_outside_the_boundary_is_rejected(
    api: APIClient, session: Session, rand: Path
) -> None:
    result = say(api, session, "Gib Nova den Ordner /etc frei")
    assert result["status"] == "rejected" and result["question"] is None
    assert result["step"] == "ausserhalb_aussenrand"
    assert not PendingQuestion.objects.filter(status="offen").exists()


def test_release_with_empty_boundary_is_rejected(
    api: APIClient, session: Session, rand: Path, settings: Any
) -> None:
    settings.FILES_BOUNDARY = []
    result = say(api, session, "Gib Nova den Ordner notizen frei")
    assert result["status"] == "rejected"
    turn_log = PipelineLog.objects.filter(node="agent").latest("id")
    assert turn_log.details["step"] == "kein_aussenrand"


def test_list_by_chat(
    api: APIClient, session: Session, rand: Path, user: Any, nova: Character
) -> None:
    root = make_root(user, nova, rand / "notizen")
    index_root_run(root_id=root.pk)
    result = say(api, session, "Welche Ordner hast du?")
    assert result["status"] == "abgeschlossen"
    ctx = AgentContext(user=user, character=nova, session=session, text="Welche Ordner hast du?")
    listed = FilesAgent().handle(ctx)
    assert f"- {root.path} (aktiv, dein Material): 4 Dateien im Index" in listed.text


@pytest.fixture
def indexed_root(rand: Path, user: Any, nova: Character) -> FileRoot:
    root = make_root(user, nova, rand / "notizen")
    index_root_run(root_id=root.pk)
    return root


@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_suspend_by_chat(
    api: APIClient, session: Session, indexed_root: FileRoot, answer: str
) -> None:
    asked = say(api, session, "Leg den Ordner notizen still")
    assert asked["status"] == "rueckfrage"
    assert f"den Ordner {indexed_root.path} stilllegen" in asked["question"]
    assert "4 Indexzeilen bleiben erhalten" in asked["question"]
    result = say(api, session, answer)
    indexed_root.refresh_from_db()
    if answer == "ja":
        assert result["status"] == "abgeschlossen" and indexed_root.state == "stillgelegt"
        assert IndexEntry.objects.filter(root=indexed_root).count() == 4  # rows stay
    else:
        assert result["status"] == "dismissed" and indexed_root.state == "aktiv"


@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_reactivate_by_chat(
    api: APIClient, session: Session, indexed_root: FileRoot, answer: str
) -> None:
    FileRoot.objects.filter(pk=indexed_root.pk).update(state="stillgelegt")
    asked = say(api, session, "Nimm den Ordner notizen wieder auf")
    assert asked["status"] == "rueckfrage" and indexed_root.path in asked["question"]
    result = say(api, session, answer)
    indexed_root.refresh_from_db()
    expected = "aktiv" if answer == "ja" else "stillgelegt"
    assert indexed_root.state == expected
    assert result["status"] == ("abgeschlossen" if answer == "ja" else "dismissed")


@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_forget_by_chat_says_what_is_deleted(
    api: APIClient, session: Session, indexed_root: FileRoot, answer: str, rand: Path
) -> None:
    asked = say(api, session, f"Vergiss den Ordner {indexed_root.path}")
    question = asked["question"]
    assert asked["status"] == "rueckfrage"
    assert f"Soll ich den Ordner {indexed_root.path} vergessen?" in question
    assert "lösche ich seine 4 Indexzeilen mit ihren Zusammenfassungen" in question
    assert "Einbettungen" in question and "Dateien selbst bleiben unberührt" in question
    result = say(api, session, answer)
    if answer == "ja":
        assert result["status"] == "abgeschlossen"
        assert not FileRoot.objects.filter(pk=indexed_root.pk).exists()
        assert not IndexEntry.objects.exists()
        assert (rand / "notizen" / "tee.md").exists()  # the files are untouched
    else:
        assert result["status"] == "dismissed"
        assert IndexEntry.objects.filter(root=indexed_root).count() == 4


def test_action_on_an_unknown_folder_is_a_named_failure(
    api: APIClient, session: Session, rand: Path
) -> None:
    result = say(api, session, "Leg den Ordner gibtsnicht still")
    assert result["status"] == "fehler" and result["question"] is None


def test_another_persons_root_is_not_found_by_chat(
    api: APIClient, session: Session, rand: Path, other_user: Any, nova: Character
) -> None:
    make_root(other_user, nova, rand / "notizen")
    result = say(api, session, "Vergiss den Ordner notizen")
    assert result["status"] == "fehler"
    assert FileRoot.objects.count() == 1


def test_content_question_is_not_routed_to_the_files_agent(
    api: APIClient, session: Session, rand: Path
) -> None:
    say(api, session, "Was steht in meinen Notizen über Tee?")
    router = PipelineLog.objects.filter(node="router").latest("id")
    assert router.outcome != "files"
