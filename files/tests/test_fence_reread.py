"""The fence holds after the release, per person, around Nova's own zone (issues 9, 10, 14).

- A released folder later swapped for a link is not followed: not at a read, not at a watcher
  run; the root says why (``pfad_geaendert``), in the API and on the roots page.
- ``{username}`` in NOVABERG_FILES_BOUNDARY makes the fence per person: Anna cannot release
  Bert's folder, Bert can.
- The knowledge zone (NOVABERG_KNOWLEDGE_DIR) is refused at the files gate with its own reason.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from conversation.models import Session
from files.models import FileRoot, IndexEntry
from files.tests.watcher_helpers import write
from files.watcher import index_root_run

pytestmark = pytest.mark.django_db

SECRET = "GEHEIMNIS-4711"


@pytest.fixture
def rand(tmp_path: Path, settings: Any) -> Path:
    inside = tmp_path / "rand"
    write(inside / "notizen", "tee.md", "# Tee\n\nGrüner Tee braucht 80 Grad Wasser.\n")
    write(inside / "anderswo", "tee.md", f"# Anderer Tee\n\n{SECRET} innen\n")
    write(tmp_path / "draussen", "tee.md", f"# Fremder Tee\n\n{SECRET} draußen\n")
    settings.FILES_BOUNDARY = [str(inside)]
    settings.FILES_BASE_DIR = inside
    return inside


def release(api: APIClient, path: str) -> FileRoot:
    response = api.post("/api/roots/", {"path": path, "eigentum": "nutzer"}, format="json")
    assert response.status_code == 201, response.content
    root_id = response.json()["id"]
    assert api.post(f"/api/roots/{root_id}/confirm/").status_code == 200
    root = FileRoot.objects.get(pk=root_id)
    assert index_root_run(root_id=root.pk).outcome == "fertig"
    return root


def swap_for_link(folder: Path, target: Path) -> None:
    """What a person (or a tool) might do after the release: the folder becomes a link."""
    folder.rename(folder.with_name(folder.name + "-alt"))
    os.symlink(target, folder)


# -- the swap of a released root ---------------------------------------------------------------


@pytest.mark.parametrize("target", ["../draussen", "anderswo"], ids=["outside", "elsewhere-inside"])
def test_a_root_swapped_for_a_link_is_not_read(api: APIClient, rand: Path, target: str) -> None:
    root = release(api, "notizen")
    first = api.get(f"/api/roots/{root.pk}/file/", {"path": "tee.md"})
    assert first.status_code == 200 and "Grüner Tee" in first.json()["text"]
    swap_for_link(rand / "notizen", (rand / target).resolve())
    response = api.get(f"/api/roots/{root.pk}/file/", {"path": "tee.md"})
    assert response.status_code == 403
    assert response.json()["step"] == "pfad_geaendert"
    assert "zeigt inzwischen woandershin" in response.json()["reason"]
    assert SECRET.encode() not in response.content
    # The root says why, in the API (an additive field) and on the root itself.
    detail = api.get(f"/api/roots/{root.pk}/").json()
    assert detail["problem"]["step"] == "pfad_geaendert"
    assert "woandershin" in detail["last_error"]
    assert "woandershin" in FileRoot.objects.get(pk=root.pk).last_error


def test_a_swapped_root_is_not_indexed_and_its_rows_stay(
    api: APIClient, rand: Path, user: Any
) -> None:
    root = release(api, "notizen")
    before = list(IndexEntry.objects.filter(root=root).values_list("rel_path", "inhalt_hash"))
    swap_for_link(rand / "notizen", rand.parent / "draussen")
    report = index_root_run(root_id=root.pk, full_hash=True)
    assert report.outcome == "pfad_geaendert"
    after = list(IndexEntry.objects.filter(root=root).values_list("rel_path", "inhalt_hash"))
    assert after == before  # not re-read from the link's target, not marked gone either
    assert not IndexEntry.objects.filter(search_text__contains=SECRET).exists()
    assert IndexEntry.objects.get(root=root).state == IndexEntry.State.PRESENT
    stored = FileRoot.objects.get(pk=root.pk)
    assert "woandershin" in stored.last_error
    page = Client()
    page.force_login(user)
    html = page.get("/roots/").content.decode()
    assert "zeigt inzwischen woandershin" in html


def test_a_root_outside_a_narrowed_boundary_is_no_longer_read(
    api: APIClient, rand: Path, settings: Any
) -> None:
    root = release(api, "notizen")
    settings.FILES_BOUNDARY = [str(rand / "anderswo")]
    response = api.get(f"/api/roots/{root.pk}/file/", {"path": "tee.md"})
    assert response.status_code == 403 and response.json()["step"] == "ausserhalb_aussenrand"
    assert index_root_run(root_id=root.pk).outcome == "ausserhalb_aussenrand"
    assert api.get(f"/api/roots/{root.pk}/").json()["problem"]["step"] == "ausserhalb_aussenrand"


def test_a_root_that_passes_has_no_problem(api: APIClient, rand: Path) -> None:
    root = release(api, "notizen")
    detail = api.get(f"/api/roots/{root.pk}/").json()
    assert detail["problem"] is None and detail["last_error"] == ""


def test_reactivating_a_swapped_root_is_refused(api: APIClient, rand: Path) -> None:
    root = release(api, "notizen")
    api.post(f"/api/roots/{root.pk}/suspend/", {"confirm": True}, format="json")
    swap_for_link(rand / "notizen", rand.parent / "draussen")
    response = api.post(f"/api/roots/{root.pk}/reactivate/", {"confirm": True}, format="json")
    assert response.status_code == 403 and response.json()["step"] == "pfad_geaendert"
    assert FileRoot.objects.get(pk=root.pk).state == FileRoot.State.SUSPENDED


# -- one person, one fence ---------------------------------------------------------------------


@pytest.fixture
def personal(tmp_path: Path, settings: Any) -> Path:
    base = tmp_path / "personen"
    write(base / "anna" / "notizen", "tee.md", "# Annas Tee\n")
    write(base / "bert" / "notizen", "tee.md", f"# Berts Tee\n\n{SECRET}\n")
    settings.FILES_BOUNDARY = [str(base / "{username}")]
    return base


def test_anna_cannot_release_berts_folder_bert_can(
    api: APIClient, other_api: APIClient, personal: Path
) -> None:
    berts = str(personal / "bert" / "notizen")
    refused = api.post("/api/roots/", {"path": berts, "eigentum": "nutzer"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["step"] == "ausserhalb_aussenrand"
    assert not FileRoot.objects.exists()
    mine = api.post(
        "/api/roots/", {"path": str(personal / "anna" / "notizen"), "eigentum": "nutzer"}
    )
    assert mine.status_code == 201
    allowed = other_api.post("/api/roots/", {"path": berts, "eigentum": "nutzer"}, format="json")
    assert allowed.status_code == 201 and allowed.json()["resolved_path"] == berts


def test_a_link_in_annas_fence_to_berts_folder_is_refused(api: APIClient, personal: Path) -> None:
    os.symlink(personal / "bert" / "notizen", personal / "anna" / "abkuerzung")
    response = api.post(
        "/api/roots/", {"path": str(personal / "anna" / "abkuerzung"), "eigentum": "nutzer"}
    )
    assert response.status_code == 403 and response.json()["step"] == "ausserhalb_aussenrand"


def test_a_root_is_read_against_its_persons_fence(
    api: APIClient, other_api: APIClient, personal: Path, user: Any
) -> None:
    berts = release(other_api, str(personal / "bert" / "notizen"))
    assert other_api.get(f"/api/roots/{berts.pk}/file/", {"path": "tee.md"}).status_code == 200
    # Even a row that names Anna as owner of Bert's folder (written by hand, not by the gate)
    # is not read for her: her fence does not hold that folder.
    FileRoot.objects.filter(pk=berts.pk).update(user=user)
    response = api.get(f"/api/roots/{berts.pk}/file/", {"path": "tee.md"})
    assert response.status_code == 403 and SECRET.encode() not in response.content


def test_anna_cannot_release_berts_folder_by_chat(
    api: APIClient, session: Session, personal: Path
) -> None:
    reply = api.post(
        f"/api/sessions/{session.pk}/messages/",
        {"text": f"Gib Nova den Ordner {personal / 'bert' / 'notizen'} frei"},
        format="json",
    ).json()
    assert reply["status"] == "rejected" and reply["question"] is None
    assert reply["step"] == "ausserhalb_aussenrand"
    assert not FileRoot.objects.exists()


# -- Nova's knowledge zone ---------------------------------------------------------------------


@pytest.fixture
def zone(rand: Path, settings: Any) -> Path:
    zone = rand / "wissen"
    write(zone / "anna-nova", "brennen.md", "# Brennen\n\nVersion 1.0\n")
    settings.KNOWLEDGE_DIR = zone
    return zone


@pytest.mark.parametrize(
    "path", ["wissen", "wissen/anna-nova", "."], ids=["zone", "inside", "contains"]
)
def test_the_zone_is_refused_at_the_gate(api: APIClient, zone: Path, path: str) -> None:
    response = api.post("/api/roots/", {"path": path, "eigentum": "figur"}, format="json")
    assert response.status_code == 403
    body = response.json()
    assert body["status"] == "abgelehnt" and body["step"] == "wissenszone"
    assert "Novas eigene Wissensablage" in body["reason"]
    assert not FileRoot.objects.exists()


def test_the_zone_is_refused_by_chat(api: APIClient, session: Session, zone: Path) -> None:
    reply = api.post(
        f"/api/sessions/{session.pk}/messages/",
        {"text": f"Gib Nova den Ordner {zone} frei"},
        format="json",
    ).json()
    assert reply["status"] == "rejected" and reply["step"] == "wissenszone"
    assert "Wissensablage" in reply["reply"]
    assert not FileRoot.objects.exists()


# -- the released directory's identity (issue 27: a swap for a real folder, a link on the way) --


def swap_for_folder(folder: Path, source: Path) -> None:
    """The folder is replaced by another real directory at the same path (no link anywhere):
    only the device and inode stored at release tell them apart."""
    folder.rename(folder.with_name(folder.name + "-alt"))
    source.rename(folder)


def test_a_root_exchanged_for_another_real_folder_is_not_read(
    api: APIClient, rand: Path, user: Any
) -> None:
    root = release(api, "notizen")
    stored = FileRoot.objects.get(pk=root.pk)
    assert stored.dir_device is not None and stored.dir_inode is not None  # from the dry run
    swap_for_folder(rand / "notizen", rand / "anderswo")

    response = api.get(f"/api/roots/{root.pk}/file/", {"path": "tee.md"})

    assert response.status_code == 403, response.content
    assert response.json()["step"] == "pfad_geaendert"
    assert "nicht mehr derselbe Ordner" in response.json()["reason"]
    assert SECRET.encode() not in response.content
    assert index_root_run(root_id=root.pk, full_hash=True).outcome == "pfad_geaendert"
    assert not IndexEntry.objects.filter(search_text__contains=SECRET).exists()
    assert api.get(f"/api/roots/{root.pk}/").json()["problem"]["step"] == "pfad_geaendert"


def test_a_root_exchanged_for_another_folder_can_be_released_anew(
    api: APIClient, rand: Path
) -> None:
    root = release(api, "notizen")
    swap_for_folder(rand / "notizen", rand / "anderswo")
    # The person looks at the new folder and releases it again: the dry run counts what is
    # there now, the confirm stores its identity, the next run verifies every row by hash.
    response = api.post("/api/roots/", {"path": "notizen", "eigentum": "nutzer"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["id"] == root.pk
    assert api.post(f"/api/roots/{root.pk}/confirm/").status_code == 200
    report = index_root_run(root_id=root.pk)
    assert report.outcome == "fertig" and report.full_hash
    read = api.get(f"/api/roots/{root.pk}/file/", {"path": "tee.md"})
    assert read.status_code == 200 and SECRET in read.json()["text"]


def test_a_root_released_before_identities_records_it_at_its_first_check(
    api: APIClient, rand: Path, user: Any
) -> None:
    root = release(api, "notizen")
    FileRoot.objects.filter(pk=root.pk).update(dir_device=None, dir_inode=None)
    assert api.get(f"/api/roots/{root.pk}/file/", {"path": "tee.md"}).status_code == 200
    stored = FileRoot.objects.get(pk=root.pk)
    st = os.stat(rand / "notizen")
    assert (stored.dir_device, stored.dir_inode) == (st.st_dev, st.st_ino)


def test_a_folder_on_the_roots_path_swapped_for_a_link_after_the_check_is_not_followed(
    api: APIClient, rand: Path, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The string check passed; then a folder *above* the root is exchanged for a link to a
    twin outside. Opening the root with O_NOFOLLOW on its last component alone would follow
    the link on the way; the root is opened from / one component at a time."""
    from files import boundary

    write(rand / "anna" / "notizen", "tee.md", "# Annas Tee\n")
    twin = rand.parent / "zwilling"
    write(twin / "notizen", "tee.md", f"# Fremd\n\n{SECRET} im Zwilling\n")
    root = release(api, "anna/notizen")
    real_check = boundary._path_check

    def check_then_swap(root: FileRoot, *, user: Any) -> boundary.RootPathCheck:
        result = real_check(root, user=user)
        if not (rand / "anna").is_symlink():
            (rand / "anna").rename(rand / "anna-echt")
            (rand / "anna").symlink_to(twin, target_is_directory=True)
        return result

    monkeypatch.setattr(boundary, "_path_check", check_then_swap)
    response = api.get(f"/api/roots/{root.pk}/file/", {"path": "tee.md"})

    assert response.status_code == 403, response.content
    assert response.json()["step"] == "pfad_geaendert"
    assert "Verknüpfung" in response.json()["reason"]
    assert SECRET.encode() not in response.content
    assert index_root_run(root_id=root.pk, full_hash=True).outcome == "pfad_geaendert"
    assert not IndexEntry.objects.filter(search_text__contains=SECRET).exists()
