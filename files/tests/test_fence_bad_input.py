"""No 500 for bad input at the file service's doors (issue 10): each answers 4xx with a named
step and a German reason; a property test throws random paths, line ranges and queries at the
read and search APIs and finds neither a 500 nor a byte from outside the root."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from conversation.models import Character
from files.models import FileRoot
from files.tests.watcher_helpers import make_root, small_corpus, write
from files.watcher import index_root_run

pytestmark = pytest.mark.django_db

SECRET = "GEHEIMNIS-4711"


@pytest.fixture
def rand(tmp_path: Path, settings: Any) -> Path:
    inside = tmp_path / "rand"
    small_corpus(inside / "notizen")
    settings.FILES_BOUNDARY = [str(inside)]
    settings.FILES_BASE_DIR = inside
    return inside


@pytest.fixture
def root(user: Any, nova: Character, rand: Path) -> FileRoot:
    """An indexed root with traps inside: a secret beside it, a link out to the secret, a
    hidden file holding it, and two kinds of symlink loop."""
    base = rand / "notizen"
    write(rand, "geheim.txt", f"{SECRET} beside the root\n")
    write(base, ".geheim.md", f"# {SECRET}\n")
    os.symlink(rand / "geheim.txt", base / "link.txt")
    os.symlink(base / "schleife", base / "schleife")
    os.symlink(base / "hin", base / "her")
    os.symlink(base / "her", base / "hin")
    root = make_root(user, nova, base)
    assert index_root_run(root_id=root.pk).outcome == "fertig"
    return root


def assert_named_refusal(response: Any, code: int, step: str) -> None:
    assert response.status_code == code, response.content
    body = response.json()
    assert body["step"] == step
    assert body["reason"] and body["status"] in {"fehler", "abgelehnt"}


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("notizen/" + "x" * 300, id="relative"),
        pytest.param("{rand}/" + "y" * 256, id="absolute"),
        pytest.param("{rand}/" + "ö" * 128 + "/unter", id="multibyte-in-the-middle"),
    ],
)
def test_release_with_a_name_over_255_bytes(api: APIClient, rand: Path, path: str) -> None:
    response = api.post(
        "/api/roots/", {"path": path.format(rand=rand), "eigentum": "nutzer"}, format="json"
    )
    assert_named_refusal(response, 400, "name_zu_lang")
    assert "255 Bytes" in response.json()["reason"]
    assert not FileRoot.objects.exists()


@pytest.mark.parametrize(
    ("path", "code", "step"),
    [
        pytest.param("x" * 300, 404, "name_zu_lang", id="name-over-255-bytes"),
        pytest.param("code/" + "ä" * 200, 404, "name_zu_lang", id="multibyte-name"),
        pytest.param("schleife", 404, "link_schleife", id="link-to-itself"),
        pytest.param("hin", 404, "link_schleife", id="two-links-in-a-ring"),
        pytest.param("schleife/tee.md", 404, "link_schleife", id="through-the-loop"),
        pytest.param("code", 404, "keine_datei", id="a-folder"),
        pytest.param("link.txt", 404, "ausserhalb", id="link-out"),
        pytest.param(".geheim.md", 404, "verborgen", id="hidden"),
        pytest.param("tee.md\x00.txt", 404, "pfad_unlesbar", id="nul"),
    ],
)
def test_read_api_bad_paths(
    api: APIClient, root: FileRoot, path: str, code: int, step: str
) -> None:
    response = api.get(f"/api/roots/{root.pk}/file/", {"path": path})
    assert_named_refusal(response, code, step)
    assert SECRET.encode() not in response.content


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param("1" * 5000 + "-2", id="thousands-of-digits-start"),
        pytest.param("1-" + "9" * 5000, id="thousands-of-digits-end"),
        pytest.param("1234567890-1234567891", id="ten-digits"),
        pytest.param("٣-٤", id="arabic-indic-digits"),
        pytest.param("3", id="no-range"),
    ],
)
def test_read_api_bad_line_ranges(api: APIClient, root: FileRoot, lines: str) -> None:
    response = api.get(f"/api/roots/{root.pk}/file/", {"path": "tee.md", "lines": lines})
    assert_named_refusal(response, 400, "zeilen_unlesbar")


def test_read_api_huge_but_readable_range_is_cut_to_the_file(
    api: APIClient, root: FileRoot
) -> None:
    response = api.get(f"/api/roots/{root.pk}/file/", {"path": "tee.md", "lines": "2-999999999"})
    assert response.status_code == 200
    assert response.json()["lines"] == "2-6"


def test_search_with_nul_is_refused(api: APIClient, root: FileRoot) -> None:
    response = api.get("/api/search/", {"q": "Tee\x00Grad"})
    assert_named_refusal(response, 400, "anfrage_unlesbar")
    assert "Nullzeichen" in response.json()["reason"]


# -- property test -----------------------------------------------------------------------------

SEGMENTS = [
    "..", ".", "", "notizen", "tee.md", "code", "app.py", "link.txt", "schleife", "hin",
    "geheim.txt", ".geheim.md", "archive", "alt.md", "/etc/passwd", "~", "%2e%2e", "x" * 300,
    "\x00", "ä" * 130, "\\", "*",
]  # fmt: skip
TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40)
PATHS = st.one_of(
    TEXT,
    st.lists(st.one_of(st.sampled_from(SEGMENTS), TEXT), min_size=1, max_size=6).map("/".join),
)
LINES = st.one_of(
    st.none(),
    TEXT,
    st.tuples(st.integers(-5, 10**12), st.integers(-5, 10**12)).map(lambda t: f"{t[0]}-{t[1]}"),
    st.from_regex(r"\A\s?\d{0,12}\s?-\s?\d{0,12}\Z"),
)
QUERIES = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=400)


@hsettings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(path=PATHS, lines=LINES, query=QUERIES)
def test_random_input_never_500_never_a_byte_from_outside(
    api: APIClient, root: FileRoot, path: str, lines: str | None, query: str
) -> None:
    params = {"path": path} if lines is None else {"path": path, "lines": lines}
    read = api.get(f"/api/roots/{root.pk}/file/", params)
    assert read.status_code < 500, (path, lines, read.content[:300])
    assert SECRET.encode() not in read.content
    if read.status_code != 200:
        assert read.json()["step"] and read.json()["reason"]
    search = api.get("/api/search/", {"q": query})
    assert search.status_code < 500, (query, search.content[:300])
    assert SECRET.encode() not in search.content
