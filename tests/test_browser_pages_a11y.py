"""The pages the other browser tests do not walk — the turn inspector and the German 404 page —
in headless Chromium at desktop and phone width: axe-core finds nothing serious or critical,
nothing is wider than the screen, and the screenshots are saved under var/screenshots/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conversation.models import Character
from conversation.pipeline import run_turn
from tests.axe import assert_accessible
from tests.chromium import CHROMIUM_ARGS
from tests.factories import SessionFactory, UserFactory
from tests.processes import offline_daphne

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parent.parent
SCREENSHOTS = BASE_DIR / "var" / "screenshots"
WIDTHS = [("desktop", {"width": 1366, "height": 900}), ("phone", {"width": 390, "height": 844})]


@pytest.fixture
def live_server_url(chromium: str) -> Iterator[str]:
    with offline_daphne("test-daphne-pages.log") as url:
        yield url


def test_inspector_and_404_page_are_accessible_at_both_widths(
    chromium: str, live_server_url: str
) -> None:
    from playwright.sync_api import expect, sync_playwright

    user = UserFactory(username="anna", is_staff=True)
    session = SessionFactory(user=user, character=Character.objects.get(name="Nova"))
    turn = run_turn(
        user=user, character=session.character, session=session, text="Wie geht es dir heute?"
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            for name, viewport in WIDTHS:
                page = browser.new_page(viewport=viewport)
                page.set_default_timeout(30_000)
                page.goto(live_server_url + "/login/")
                page.fill("input[name=username]", "anna")
                page.fill("input[name=password]", "geheim123")
                page.click("button[type=submit]")
                expect(page.locator("#text")).to_be_visible()

                page.goto(f"{live_server_url}/turns/{turn.turn_id}/")
                expect(page.locator("h1")).to_have_count(1)
                expect(page.locator("body")).to_contain_text("Wie geht es dir heute?")
                assert page.evaluate(
                    "() => document.documentElement.scrollWidth <= window.innerWidth + 1"
                ), f"inspector wider than the screen at {name}"
                page.screenshot(path=str(SCREENSHOTS / f"inspector-{name}.png"), full_page=True)
                assert_accessible(page, f"inspector-{name}")

                answer = page.goto(live_server_url + "/gibt-es-nicht/")
                assert answer is not None and answer.status == 404
                expect(page.locator("h1")).to_have_count(1)
                page.screenshot(path=str(SCREENSHOTS / f"404-{name}.png"))
                assert_accessible(page, f"404-{name}")
                page.close()
        finally:
            browser.close()
