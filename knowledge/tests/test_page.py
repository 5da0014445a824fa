"""The "Wissen" page: her files with versions and reinforcement, the edits with diffs and
marks, each with an undo that asks first — only the signed-in person's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.test import Client

from conversation.models import Character
from knowledge.tools import block_anfuegen, datei_schreiben


def test_the_page_lists_her_files_and_edits_and_no_one_elses(
    corpus: dict[str, Any], folder: Path, user: Any, other_user: Any, nova: Character
) -> None:
    edit = block_anfuegen(
        user=user, character=nova, path="tee.md", text="Schwarzer Tee zieht fünf Minuten."
    )
    assert edit.ok
    theirs = datei_schreiben(
        user=other_user, character=nova, path="geheimrezept.md", thema="Bertas Geheimrezept",
        inhalt="Nur für Bert: drei Nelken.",
    )  # fmt: skip
    assert theirs.ok
    client = Client()
    client.force_login(user)
    page = client.get("/wissen/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Novas Wissen" in html and 'name="viewport"' in html
    for path in corpus:
        assert f"<code>{path}</code>" in html
    assert "Version 1.1" in html  # tee.md after the edit
    assert '<span class="mark">[i1&gt;]</span>' in html
    assert "+[i1&gt;] Schwarzer Tee zieht fünf Minuten. [&lt;i1]" in html
    assert f'data-url="/api/knowledge/edits/{edit.edit_pk}/undo/"' in html
    assert "geheimrezept" not in html and "Nelken" not in html
    assert f"/api/knowledge/edits/{theirs.edit_pk}/" not in html


def test_the_page_needs_a_login(db: None) -> None:
    page = Client().get("/wissen/")
    assert page.status_code == 302 and "/login" in page["Location"]


def test_the_nav_links_to_the_page(user: Any) -> None:
    client = Client()
    client.force_login(user)
    assert '<a href="/wissen/">Wissen</a>' in client.get("/wissen/").content.decode()
