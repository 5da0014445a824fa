"""GET /api/search/ and GET /api/roots/{id}/file/ through the real HTTP stack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from conversation.models import Character
from files.models import FileRoot
from files.tests.corpus import make_root


@pytest.fixture
def root(user: Any, nova: Character, tmp_path: Path) -> FileRoot:
    return make_root(user=user, character=nova, directory=tmp_path / "ablage")


@pytest.mark.django_db
def test_search_returns_hits_with_channel_citation_strength(root: FileRoot, api: APIClient) -> None:
    response = api.get("/api/search/", {"q": "Schrühbrand"})
    assert response.status_code == 200
    first = response.json()["results"][0]
    assert first["path"] == "toepfern/brennen.md"
    assert first["citation"] == "toepfern/brennen.md:5-9"
    assert first["lines"] == "5-9"
    assert first["channel"] in {"beide", "lexikalisch"}
    assert first["strength"] in {"stark", "mittel"}
    assert first["archived"] is False


@pytest.mark.django_db
def test_search_marks_archived(root: FileRoot, api: APIClient) -> None:
    results = api.get("/api/search/", {"q": "Tropfschlauch Feuchtesensor"}).json()["results"]
    assert results[0]["path"] == "archive/konzept-bewaesserung.md"
    assert results[0]["archived"] is True


@pytest.mark.django_db
def test_search_bad_input(root: FileRoot, api: APIClient) -> None:
    empty = api.get("/api/search/", {"q": "  "})
    assert empty.status_code == 400 and empty.json()["step"] == "leere_anfrage"
    huge = api.get("/api/search/", {"q": "x" * 5000})
    assert huge.status_code == 400 and huge.json()["step"] == "anfrage_zu_lang"


@pytest.mark.django_db
def test_other_user_sees_nothing(root: FileRoot, other_api: APIClient) -> None:
    assert other_api.get("/api/search/", {"q": "Schrühbrand"}).json() == {"results": []}
    response = other_api.get(f"/api/roots/{root.id}/file/", {"path": "plan.md"})
    assert response.status_code == 404


@pytest.mark.django_db
def test_file_viewer_returns_the_lines(root: FileRoot, api: APIClient) -> None:
    response = api.get(f"/api/roots/{root.id}/file/", {"path": "plan.md", "lines": "13-14"})
    assert response.status_code == 200
    body = response.json()
    assert body["path"] == "plan.md" and body["lines"] == "13-14"
    assert body["text"].splitlines()[0] == "## 3. Ummelden"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["../geheim.txt", "/etc/passwd", "fehlt.md"])
def test_file_viewer_404_outside_the_root(
    root: FileRoot, api: APIClient, tmp_path: Path, path: str
) -> None:
    (tmp_path / "geheim.txt").write_text("geheim")
    response = api.get(f"/api/roots/{root.id}/file/", {"path": path})
    assert response.status_code == 404
    assert "geheim" not in response.content.decode()


@pytest.mark.django_db
def test_file_viewer_bad_lines(root: FileRoot, api: APIClient) -> None:
    response = api.get(f"/api/roots/{root.id}/file/", {"path": "plan.md", "lines": "x"})
    assert response.status_code == 400 and response.json()["step"] == "zeilen_unlesbar"


@pytest.mark.django_db
def test_file_viewer_needs_login(root: FileRoot) -> None:
    response = APIClient().get(f"/api/roots/{root.id}/file/", {"path": "plan.md"})
    assert response.status_code in {401, 403}
