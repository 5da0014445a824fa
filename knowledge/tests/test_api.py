"""The knowledge endpoints through the real HTTP stack: shapes, scoping, the undo question."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from conversation.models import Character
from knowledge.models import KnowledgeEntry
from knowledge.selectors import SOURCE_GONE
from knowledge.tools import block_anfuegen, block_einfuegen, datei_schreiben


def _count_queries(client: APIClient, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_list_shape_and_scope(corpus: dict[str, Any], api: APIClient, other_api: APIClient) -> None:
    KnowledgeEntry.objects.filter(path="kennlinie.md").update(
        sources=[{"path": "notizen/k.md", "lines": "3-9", "hash": "ab" * 32}]
    )
    body = api.get("/api/knowledge/").json()
    assert [row["path"] for row in body] == sorted(corpus)
    row = next(r for r in body if r["path"] == "kennlinie.md")
    assert set(row) == {"id", "path", "topic", "version", "haeufigkeit", "verstaerkt_am", "sources"}
    assert (row["topic"], row["version"], row["haeufigkeit"], row["verstaerkt_am"]) == (
        "Sättigung der Kennlinie", "1.0", 1, None,
    )  # fmt: skip
    # No released file of hers has that path (any more): the re-opener says so.
    assert row["sources"] == [
        {"path": "notizen/k.md", "lines": "3-9", "hash": "ab" * 32, "mark": SOURCE_GONE}
    ]
    assert other_api.get("/api/knowledge/").json() == []
    assert APIClient().get("/api/knowledge/").status_code in (401, 403)


def test_list_queries_do_not_grow_with_rows(
    folder: Path, user: Any, nova: Character, api: APIClient
) -> None:
    for i in range(2):
        datei_schreiben(user=user, character=nova, path=f"a{i}.md", thema=f"A{i}", inhalt="x")
        block_anfuegen(user=user, character=nova, path=f"a{i}.md", text="mehr")
    few = (_count_queries(api, "/api/knowledge/"), _count_queries(api, "/api/knowledge/edits/"))
    for i in range(2, 7):
        datei_schreiben(user=user, character=nova, path=f"a{i}.md", thema=f"A{i}", inhalt="x")
        block_anfuegen(user=user, character=nova, path=f"a{i}.md", text="mehr")
    many = (_count_queries(api, "/api/knowledge/"), _count_queries(api, "/api/knowledge/edits/"))
    assert few == many


def test_detail_has_the_text_and_is_scoped(
    corpus: dict[str, Any], folder: Path, api: APIClient, other_api: APIClient
) -> None:
    entry = corpus["tee.md"]
    body = api.get(f"/api/knowledge/{entry.pk}/").json()
    assert body["text"] == (folder / "tee.md").read_text()
    assert (body["id"], body["path"], body["version"], body["text_step"]) == (
        entry.pk,
        "tee.md",
        "1.0",
        "",
    )
    assert 0.99 < body["effektives_gewicht"] <= 1.0
    assert other_api.get(f"/api/knowledge/{entry.pk}/").status_code == 404
    assert api.get("/api/knowledge/999999/").status_code == 404
    (folder / "tee.md").unlink()
    gone = api.get(f"/api/knowledge/{entry.pk}/").json()
    assert (gone["text"], gone["text_step"]) == (None, "datei_fehlt")


def test_edits_list_shows_diff_mark_and_cause(
    corpus: dict[str, Any], user: Any, nova: Character, api: APIClient, other_api: APIClient
) -> None:
    done = block_einfuegen(
        user=user, character=nova, path="kennlinie.md", text="Neu.", nach="Definition"
    )
    body = api.get("/api/knowledge/edits/").json()
    assert body[0]["id"] == done.edit_id  # newest first
    assert set(body[0]) == {"id", "path", "mark", "cause", "outcome", "created_at", "diff"}
    assert (body[0]["path"], body[0]["mark"], body[0]["outcome"]) == (
        "kennlinie.md",
        "[i1>]",
        "geschrieben",
    )
    assert body[0]["cause"] == {
        "kind": "person",
        "memory_id": None,
        "turn_id": None,
        "undoes": None,
    }
    assert "+[i1>] Neu. [<i1]" in body[0]["diff"] and "-Version: 1.0" in body[0]["diff"]
    assert len(body) == 5  # four files created, one insertion
    assert other_api.get("/api/knowledge/edits/").json() == []


def test_undo_asks_first_then_restores(
    corpus: dict[str, Any],
    folder: Path,
    user: Any,
    nova: Character,
    api: APIClient,
    other_api: APIClient,
) -> None:
    before = (folder / "kennlinie.md").read_bytes()
    done = block_einfuegen(
        user=user, character=nova, path="kennlinie.md", text="Neu.", nach="Definition"
    )
    url = f"/api/knowledge/edits/{done.edit_id}/undo/"
    after = (folder / "kennlinie.md").read_bytes()
    asked = api.post(url, {}, format="json")
    assert asked.status_code == 200
    assert asked.json() == {
        "id": done.edit_id,
        "status": "rueckfrage",
        "question": "Soll ich die Einarbeitung [i1>] in kennlinie.md zurücknehmen? Dann steht "
        "dort wieder, was vorher dort stand.",
    }
    assert (folder / "kennlinie.md").read_bytes() == after  # a question writes nothing
    assert api.post(url, {"confirm": "vielleicht"}, format="json").status_code == 400
    assert other_api.post(url, {"confirm": True}, format="json").status_code == 404
    assert (folder / "kennlinie.md").read_bytes() == after
    undone = api.post(url, {"confirm": True}, format="json")
    assert undone.status_code == 200
    assert (undone.json()["status"], undone.json()["version"]) == ("abgeschlossen", "1.0")
    assert (folder / "kennlinie.md").read_bytes() == before
    again = api.post(url, {"confirm": True}, format="json")
    assert again.status_code == 409
    assert again.json()["step"] == "schon_zurueckgenommen"
    outcomes = {e["id"]: e["outcome"] for e in api.get("/api/knowledge/edits/").json()}
    assert outcomes[done.edit_id] == "zurueckgenommen"


def test_the_schema_documents_the_endpoints(api: APIClient) -> None:
    schema = api.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert {"/api/knowledge/", "/api/knowledge/{entry_id}/", "/api/knowledge/edits/",
            "/api/knowledge/edits/{edit_id}/undo/"} <= set(paths)  # fmt: skip
    undo = paths["/api/knowledge/edits/{edit_id}/undo/"]["post"]["responses"]
    assert {"200", "404", "409"} <= set(undo)


def test_admin_is_read_only(corpus: dict[str, Any], client: Any, user: Any) -> None:
    user.is_staff = user.is_superuser = True
    user.save()
    client.force_login(user)
    for name in ("knowledgeentry", "knowledgeedit", "rueckwegrun"):
        page = client.get(f"/admin/knowledge/{name}/")
        assert page.status_code == 200
        assert client.get(f"/admin/knowledge/{name}/add/").status_code == 403
    entry = corpus["tee.md"]
    page = client.get(f"/admin/knowledge/knowledgeentry/{entry.pk}/change/")
    assert page.status_code == 200 and b"Wissensdatei" in page.content
    assert b'name="_save"' not in page.content
