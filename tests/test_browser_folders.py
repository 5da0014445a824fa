"""The folders page, the login and the Wissen page in headless Chromium, at desktop and phone
width: a failed login keeps the name; a folder is released through the one flow (path → the dry
run with each skipped file → "Freigeben"), its progress shows from the first poll (queued /
counting / reading) until the run is done, read by the real Celery worker. Screenshots go to
var/screenshots/ (folders-*, login-*, wissen-*); axe-core checks every page at both widths."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from conversation.models import Character
from files.models import FileRoot, IndexRun
from knowledge.tests.corpus import make_corpus
from knowledge.tools import block_anfuegen
from novaberg import launcher
from tests.axe import assert_accessible
from tests.chromium import CHROMIUM_ARGS
from tests.factories import UserFactory
from tests.processes import free_port, log_dir, start_daphne, stop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parent.parent
SCREENSHOTS = BASE_DIR / "var" / "screenshots"
WIDTHS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
# Every text the progress line showed, collected in the page (polls are faster than a test).
WATCH_PROGRESS = """() => {
  window.__seen = [];
  const note = () => document.querySelectorAll('#roots-body .progress-text')
    .forEach((p) => { if (p.textContent) window.__seen.push(p.textContent); });
  new MutationObserver(note).observe(document.getElementById('roots-body'),
    {subtree: true, childList: true, characterData: true});
}"""


@pytest.fixture
def setup(tmp_path: Path, settings: Any) -> dict[str, Any]:
    """Anna, Nova's knowledge with one edit, and the boundary `make run` would set: the sample
    folder, plus a second folder for the phone's release."""
    nova = Character.objects.get(name="Nova")
    user = UserFactory(username="anna")
    settings.KNOWLEDGE_DIR = tmp_path / "wissen"
    make_corpus(user, nova)
    edit = block_anfuegen(
        user=user, character=nova, path="tee.md", text="Schwarzer Tee zieht fünf Minuten."
    )
    assert edit.ok
    data = tmp_path / "data"
    data.mkdir()
    boundary = launcher.files_boundary_default(data, environ={})
    assert boundary.sample is not None
    reise = Path(boundary.env["NOVABERG_FILES_BOUNDARY"]) / "reise"
    reise.mkdir()
    for i in range(1, 4):
        (reise / f"tag-{i}.md").write_text(f"# Tag {i}\n\nWanderung zur Hütte {i}.\n")
    (reise / ".entwurf.md").write_text("# Entwurf\n")
    return {
        "user": user,
        "boundary": boundary.env["NOVABERG_FILES_BOUNDARY"],
        "sample": str(boundary.sample),
        "reise": str(reise),
        "zone": str(settings.KNOWLEDGE_DIR),
    }


@pytest.fixture
def live_url(chromium: str, setup: dict[str, Any], celery_worker_proc: Any) -> Iterator[str]:
    # The worker indexes with the boundary of this test run (pytest's temp folder, which holds
    # this test's folders); daphne gets the boundary `make run` would set.
    assert any(setup["boundary"].startswith(b) for b in django_settings.FILES_BOUNDARY)
    port = free_port()
    proc = start_daphne(
        port,
        log_path=log_dir() / "test-daphne-folders.log",
        NOVABERG_FILES_BOUNDARY=setup["boundary"],
        NOVABERG_KNOWLEDGE_DIR=setup["zone"],
        NOVABERG_LLM_BASE_URL="",
        NOVABERG_LOG_LEVEL="WARNING",
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def _no_sideways_scroll(page: Any, width: int) -> None:
    scroll = page.evaluate("() => document.scrollingElement.scrollWidth")
    assert scroll <= width, f"page is {scroll}px wide at {width}px"


def _targets_are_large(page: Any, selector: str) -> None:
    small = page.evaluate(
        """(sel) => [...document.querySelectorAll(sel)]
            .filter((el) => el.offsetParent !== null)
            .map((el) => [el.textContent.trim(), el.getBoundingClientRect().height])
            .filter(([, h]) => h < 44)""",
        selector,
    )
    assert small == [], f"targets under 44 px: {small}"


def test_login_folders_and_wissen_at_both_widths(
    chromium: str, live_url: str, setup: dict[str, Any]
) -> None:
    from playwright.sync_api import expect, sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            for name, viewport in WIDTHS.items():
                page = browser.new_page(viewport=viewport)
                page.set_default_timeout(30_000)

                # Login: a wrong password keeps the name and says why.
                page.goto(live_url + "/login/")
                page.fill("#id_username", "anna")
                page.fill("#id_password", "falsch")
                page.click("button[type=submit]")
                expect(page.locator("#login-error")).to_contain_text("stimmen nicht")
                expect(page.locator("#id_username")).to_have_value("anna")
                page.screenshot(path=str(SCREENSHOTS / f"login-{name}.png"))
                assert_accessible(page, f"login-{name}")
                page.fill("#id_password", "geheim123")
                page.click("button[type=submit]")
                page.wait_for_url(lambda url: "/login/" not in url)

                # The folders page: the path, then the dry run with each skipped file.
                page.goto(live_url + "/roots/")
                expect(page.locator("h1")).to_have_text("Ordner")
                page.evaluate(WATCH_PROGRESS)
                folder = setup["sample"] if name == "desktop" else setup["reise"]
                hidden = ".privat.md" if name == "desktop" else ".entwurf.md"
                count = "4 Dateien" if name == "desktop" else "3 Dateien"
                if name == "desktop":
                    # `make run`'s sample folder is offered in the path field.
                    expect(page.locator("#release-path")).to_have_value(folder)
                else:
                    page.fill("#release-path", folder)
                    # Abbrechen releases nothing and brings the path field back.
                    page.click("#release-check")
                    expect(page.locator("#gate")).to_be_visible()
                    page.click("#gate-cancel")
                    expect(page.locator("#release-form")).to_be_visible()
                    expect(page.locator(f'.folder:has-text("{folder}")')).to_have_count(0)
                    page.fill("#release-path", folder)
                page.click("#release-check")
                gate = page.locator("#gate")
                expect(gate).to_be_visible()
                expect(page.locator("#gate-path")).to_have_text(folder)
                expect(page.locator("#gate-count")).to_contain_text(count)
                expect(page.locator("#gate-skipped-list")).to_contain_text(hidden)
                expect(page.locator("#gate-skipped-list")).to_contain_text("verborgen")
                expect(page.locator("#release-form")).to_be_hidden()  # one flow, no 2nd button
                assert page.locator("button:text-is('Freigeben')").count() == 1
                # While its dry run is open the folder has no card of its own (no 2nd Vergessen).
                expect(page.locator(".folder").filter(has_text=folder)).to_have_count(0)
                page.screenshot(path=str(SCREENSHOTS / f"folders-dryrun-{name}.png"))
                assert_accessible(page, f"folders-dryrun-{name}")
                _targets_are_large(page, "#roots button, #roots summary, #roots input")

                # Freigeben: the card shows the run from the first poll on, then the result.
                page.click("#gate-confirm")
                card = page.locator(".folder").filter(has_text=folder)
                expect(card).to_have_count(1)
                expect(card.locator(".progress-text, .last-run").first).not_to_be_empty()
                card.scroll_into_view_if_needed()
                page.screenshot(path=str(SCREENSHOTS / f"folders-progress-{name}.png"))
                expect(card.locator(".last-run")).to_contain_text(
                    "Zuletzt gelesen am", timeout=120_000
                )
                expect(card.locator(".last-run")).to_contain_text(count)
                expect(card.locator(".badge")).to_have_text("freigegeben")
                seen = page.evaluate("() => window.__seen")
                phases = ("In der Warteschlange", "Nova zählt", "Nova liest")
                assert any(s.startswith(phases) for s in seen), seen
                card.locator(".skipped summary").click()
                expect(card.locator(".skipped-list")).to_contain_text(hidden)
                page.screenshot(path=str(SCREENSHOTS / f"folders-{name}.png"), full_page=True)
                assert_accessible(page, f"folders-{name}")
                _targets_are_large(page, "#roots-body button, #roots-body summary")
                _no_sideways_scroll(page, viewport["width"])

                # Wissen: her files and the edit with its diff and mark.
                page.goto(live_url + "/wissen/")
                edit = page.locator("li.edit").first
                edit.locator("summary").click()
                expect(edit.locator(".diff")).to_contain_text("+[i1>] Schwarzer Tee")
                expect(edit.locator(".mark")).to_have_text("[i1>]")
                page.screenshot(path=str(SCREENSHOTS / f"wissen-{name}.png"), full_page=True)
                assert_accessible(page, f"wissen-{name}")
                _targets_are_large(page, "#wissen button, #wissen summary")
                _no_sideways_scroll(page, viewport["width"])
                page.close()
        finally:
            browser.close()
    for path in (setup["sample"], setup["reise"]):
        root = FileRoot.objects.get(user=setup["user"], path=path)
        assert root.state == FileRoot.State.ACTIVE
        assert IndexRun.objects.filter(root=root, state=IndexRun.State.DONE).exists()
