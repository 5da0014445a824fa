"""/api/roots/ (DESIGN.md "Interfaces") and the roots page: owner-scoped, same gate logic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from files.models import FileRoot, IndexEntry
from files.tests.watcher_helpers import small_corpus, write
from files.watcher import index_root_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def rand(tmp_path: Path, settings: Any) -> Path:
    inside = tmp_path / "rand"
    small_corpus(inside / "notizen")
    write(inside / "notizen", ".versteckt.md", "# x\n")
    settings.FILES_BOUNDARY = [str(inside)]
    settings.FILES_BASE_DIR = inside
    return inside


def test_release_returns_the_dry_run_then_confirm_activates(api: APIClient, rand: Path) -> None:
    response = api.post("/api/roots/", {"path": "notizen/..//notizen", "eigentum": "nutzer"})
    assert response.status_code == 201
    body = response.json()
    assert body["resolved_path"] == str(rand / "notizen")
    assert body["file_count"] == 4 and body["skipped"] == {"verborgen": 1}
    assert body["status"] == "rueckfrage"
    root = FileRoot.objects.get(pk=body["id"])
    assert root.state == "angefragt"  # nothing is indexed before the confirm
    assert index_root_run(root_id=root.pk).outcome == "nicht_aktiv"
    confirmed = api.post(f"/api/roots/{root.pk}/confirm/")
    assert confirmed.status_code == 200
    assert confirmed.json() == {"id": root.pk, "state": "aktiv"}
    index_root_run(root_id=root.pk)
    detail = api.get(f"/api/roots/{root.pk}/").json()
    assert detail["state"] == "aktiv" and detail["eigentum"] == "nutzer"
    assert detail["progress"] == {"done": 4, "total": 4, "running": False}
    assert detail["counts"]["new"] == 4 and detail["counts"]["errors"] == 0
    assert detail["counts"]["skipped"] == {"verborgen": 1}


@pytest.mark.parametrize(
    ("boundary", "path", "code", "step"),
    [
        pytest.param(True, "/etc", 403, "ausserhalb_aussenrand", id="outside"),
        pytest.param(False, "notizen", 403, "kein_aussenrand", id="empty-boundary"),
        pytest.param(True, "fehlt", 400, "nicht_gefunden", id="missing"),
    ],
)
def test_refusals_are_abgelehnt(
    api: APIClient, rand: Path, settings: Any, boundary: bool, path: str, code: int, step: str
) -> None:
    if not boundary:
        settings.FILES_BOUNDARY = []
    response = api.post("/api/roots/", {"path": path, "eigentum": "nutzer"})
    assert response.status_code == code
    assert response.json()["status"] == "abgelehnt" and response.json()["step"] == step
    assert response.json()["reason"]
    assert not FileRoot.objects.exists()


def test_index_endpoint_enqueues_after_commit(
    api: APIClient, rand: Path, django_capture_on_commit_callbacks: Any, monkeypatch: Any
) -> None:
    from files import tasks

    sent: list[int] = []
    monkeypatch.setattr(tasks.index_root, "apply_async", lambda args, **kw: sent.append(args[0]))
    root_id = api.post("/api/roots/", {"path": "notizen", "eigentum": "figur"}).json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        api.post(f"/api/roots/{root_id}/confirm/")
    assert sent == [root_id]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api.post(f"/api/roots/{root_id}/index/")
    assert response.status_code == 202 and len(callbacks) == 1  # enqueued on commit only


def test_suspend_reactivate_forget_need_the_confirm_flag(api: APIClient, rand: Path) -> None:
    root_id = api.post("/api/roots/", {"path": "notizen", "eigentum": "nutzer"}).json()["id"]
    api.post(f"/api/roots/{root_id}/confirm/")
    index_root_run(root_id=root_id)
    asked = api.post(f"/api/roots/{root_id}/suspend/", {}, format="json").json()
    assert asked["status"] == "rueckfrage" and FileRoot.objects.get(pk=root_id).state == "aktiv"
    api.post(f"/api/roots/{root_id}/suspend/", {"confirm": True}, format="json")
    assert FileRoot.objects.get(pk=root_id).state == "stillgelegt"
    api.post(f"/api/roots/{root_id}/reactivate/", {"confirm": True}, format="json")
    assert FileRoot.objects.get(pk=root_id).state == "aktiv"
    forgot = api.post(f"/api/roots/{root_id}/forget/", {"confirm": True}, format="json").json()
    assert forgot["entries_deleted"] == 4
    assert not FileRoot.objects.exists() and not IndexEntry.objects.exists()


def test_another_persons_root_answers_404(api: APIClient, other_api: APIClient, rand: Path) -> None:
    root_id = api.post("/api/roots/", {"path": "notizen", "eigentum": "nutzer"}).json()["id"]
    for method, suffix in [
        ("get", ""),
        ("post", "confirm/"),
        ("post", "index/"),
        ("post", "suspend/"),
        ("post", "forget/"),
    ]:
        response = getattr(other_api, method)(f"/api/roots/{root_id}/{suffix}", format="json")
        assert response.status_code == 404, suffix
    assert other_api.get("/api/roots/").json() == []
    assert api.get("/api/roots/").json()[0]["id"] == root_id
    assert FileRoot.objects.get(pk=root_id).state == "angefragt"


def test_list_endpoint_query_count_does_not_grow(
    api: APIClient, rand: Path, django_assert_max_num_queries: Any
) -> None:
    for i in range(5):
        write(rand, f"ordner{i}/a.md", "# a\n")
        api.post("/api/roots/", {"path": f"ordner{i}", "eigentum": "nutzer"})
    with django_assert_max_num_queries(4):
        assert len(api.get("/api/roots/").json()) == 5


def test_roots_page_renders_for_the_owner(user: Any, rand: Path) -> None:
    client = Client()
    client.force_login(user)
    page = client.get("/roots/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Freigegebene Ordner" in html and "files.js" in html and str(rand) in html
    assert Client().get("/roots/").status_code == 302  # login required
