"""The folders page and what it reads from the roots API: one name ("Ordner"), plain words
instead of "Außenrand", the skipped files by name (dry run and watcher run), a folder that
disappears shows as missing at once, and the launcher's sample folder can be released."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from files.tests.watcher_helpers import small_corpus, write
from files.watcher import index_root_run
from novaberg import launcher

pytestmark = pytest.mark.django_db


@pytest.fixture
def rand(tmp_path: Path, settings: Any) -> Path:
    inside = tmp_path / "rand"
    small_corpus(inside / "notizen")
    write(inside / "notizen", ".versteckt.md", "# x\n")
    write(inside / "notizen", "foto.jpg", b"\xff\xd8\xff\xe0")
    settings.FILES_BOUNDARY = [str(inside)]
    settings.FILES_BASE_DIR = inside
    return inside


def page(user: User) -> str:
    client = Client()
    client.force_login(user)
    answer = client.get("/roots/")
    assert answer.status_code == 200
    return answer.content.decode()


def test_the_page_is_called_ordner_with_one_h1_and_labelled_fields(user: User, rand: Path) -> None:
    html = page(user)
    assert html.count("<h1") == 1 and "<h1>Ordner</h1>" in html
    assert "<title>Ordner – Novaberg</title>" in html
    assert '<a href="/roots/">Ordner</a>' in html  # the nav uses the same name
    for name in ("Unterlagen", "Freigaben", "Außenrand"):
        assert name not in html, name
    assert '<label for="release-path">Pfad des Ordners</label>' in html
    assert 'id="gate-confirm">Freigeben</button>' in html
    assert 'id="gate-cancel">Abbrechen</button>' in html
    assert html.count(">Freigeben</button>") == 1  # one release button, not two
    assert "folders.css" in html and str(rand) in html


def test_without_a_boundary_the_page_says_so_in_plain_words(user: User, settings: Any) -> None:
    settings.FILES_BOUNDARY = []
    html = page(user)
    assert "Noch lässt sich kein Ordner freigeben." in html
    assert "kein erlaubter Bereich eingerichtet" in html


def test_a_refusal_names_the_allowed_area_not_the_aussenrand(api: APIClient, rand: Path) -> None:
    answer = api.post("/api/roots/", {"path": "/etc", "eigentum": "nutzer"}, format="json")
    assert answer.status_code == 403
    assert "außerhalb des erlaubten Bereichs" in answer.json()["reason"]
    assert "Außenrand" not in answer.json()["reason"]


def test_the_dry_run_and_the_run_name_each_skipped_file_with_its_reason(
    api: APIClient, rand: Path
) -> None:
    answer = api.post("/api/roots/", {"path": "notizen", "eigentum": "nutzer"}, format="json")
    assert answer.status_code == 201
    body = answer.json()
    assert body["skipped"] == {"format": 1, "verborgen": 1}
    assert sorted(body["skipped_files"], key=lambda s: s["path"]) == [
        {"path": ".versteckt.md", "reason": "verborgen"},
        {"path": "foto.jpg", "reason": "format"},
    ]
    root_id = body["id"]
    assert api.post(f"/api/roots/{root_id}/confirm/").status_code == 200
    index_root_run(root_id=root_id)
    counts = api.get(f"/api/roots/{root_id}/").json()["counts"]
    assert {"path": ".versteckt.md", "reason": "verborgen"} in counts["skipped_files"]
    assert sum(counts["skipped"].values()) == len(counts["skipped_files"])


def test_a_folder_that_disappears_is_shown_missing_before_the_next_run(
    api: APIClient, rand: Path
) -> None:
    body = api.post("/api/roots/", {"path": "notizen", "eigentum": "nutzer"}, format="json").json()
    api.post(f"/api/roots/{body['id']}/confirm/")
    assert api.get(f"/api/roots/{body['id']}/").json()["missing"] is False
    shutil.rmtree(rand / "notizen")
    listed = api.get("/api/roots/").json()
    assert [r["missing"] for r in listed] == [True]
    assert listed[0]["problem"] is None  # gone, not refused: the rows are kept


def test_the_launchers_sample_folder_is_offered_and_releases(
    user: User, api: APIClient, tmp_path: Path, settings: Any
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    setup = launcher.files_boundary_default(data, environ={})
    assert setup.sample is not None
    settings.FILES_BOUNDARY = [setup.env["NOVABERG_FILES_BOUNDARY"]]
    html = page(user)
    assert f'value="{setup.sample}"' in html  # the path field holds the sample folder
    answer = api.post("/api/roots/", {"path": str(setup.sample), "eigentum": "nutzer"})
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["file_count"] == 4 and body["skipped"] == {"verborgen": 1}
    api.post(f"/api/roots/{body['id']}/confirm/")
    assert f'value="{setup.sample}"' not in page(user)  # released: no longer offered
