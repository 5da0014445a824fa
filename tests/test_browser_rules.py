"""The rules page in headless Chromium at desktop and phone width: a new rule is proposed on the
page, Nova's question appears word for word, nothing is written before the click on
"Ja, so machen", and afterwards the rule stands in the list with its history. Screenshots:
var/screenshots/rules-desktop.png and rules-phone.png; axe-core finds nothing serious."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest
from django.db import connection

from directives.agent.validate import question_for
from directives.models import Directive, DirectiveStep
from tests.axe import assert_accessible
from tests.chromium import CHROMIUM_ARGS
from tests.factories import UserFactory
from tests.processes import offline_daphne

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parent.parent
SCREENSHOTS = BASE_DIR / "var" / "screenshots"
T = TypeVar("T")
WIDTHS = [
    ("desktop", {"width": 1366, "height": 900}, "Sprich nie über das Wetter"),
    ("phone", {"width": 390, "height": 844}, "Nenn mich Kapitänin"),
]


@pytest.fixture
def live_server_url(chromium: str) -> Iterator[str]:
    with offline_daphne("test-daphne-rules.log") as url:
        yield url


def _in_thread(query: Callable[[], T]) -> T:
    """A database read beside Playwright's event loop (Django refuses sync queries inside it)."""

    def run() -> T:
        try:
            return query()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result(timeout=30)


def _min_target_px(page: Any) -> float:
    """The smallest height of a visible button or summary on the page, in CSS pixels."""
    return float(
        page.evaluate(
            """() => Math.min(...[...document.querySelectorAll('#regeln button, #regeln summary')]
                .filter(el => el.offsetParent !== null)
                .map(el => el.getBoundingClientRect().height))"""
        )
    )


def test_a_rule_from_the_rules_page_at_both_widths(chromium: str, live_server_url: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    user = UserFactory(username="anna")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            for name, viewport, rule in WIDTHS:
                page = browser.new_context(viewport=viewport).new_page()
                page.set_default_timeout(30_000)
                page.goto(live_server_url + "/login/?next=/regeln/")
                page.fill("input[name=username]", "anna")
                page.fill("input[name=password]", "geheim123")
                page.click("button[type=submit]")
                expect(page.locator("h1")).to_have_text("Deine Regeln")

                page.fill("#neu-text", rule)
                page.get_by_role("button", name="Regel vorschlagen").click()
                question = page.locator("#regeln-frage")
                expect(question).to_be_visible()
                expect(page.locator("#frage-text")).to_have_text(question_for("create", text=rule))
                expect(question).to_be_focused()
                # Asked, not done: nothing is written before the consent click.
                assert not _in_thread(Directive.objects.filter(user=user, text=rule).exists)
                page.screenshot(path=str(SCREENSHOTS / f"rules-{name}-question.png"))
                assert_accessible(page, f"rules-{name}-question")

                page.get_by_role("button", name="Ja, so machen").click()
                expect(page.locator("#regeln-status")).to_contain_text(
                    f"Ab jetzt gilt die Direktive '{rule}'"
                )
                expect(question).to_be_hidden()
                card = page.locator("#aktive-regeln .card", has_text=rule)
                expect(card).to_have_count(1)
                expect(card.locator(".edit-form")).to_be_hidden()  # opens only on "Ändern"
                card.locator("summary").click()
                steps = card.locator(".steps li")
                expect(steps.filter(has_text="Nova hat gefragt")).to_have_count(1)
                expect(steps.filter(has_text="Zugestimmt")).to_have_count(1)
                expect(steps.filter(has_text="Nachgelesen")).to_have_count(1)
                assert _in_thread(
                    DirectiveStep.objects.filter(
                        user=user,
                        directive__text=rule,
                        directive__active=True,
                        step="verifiziert",
                        pending_id__isnull=False,
                    ).exists
                )

                # Phone width: nothing wider than the screen, every target at least 44 px.
                scroll_width = page.evaluate("() => document.documentElement.scrollWidth")
                assert scroll_width <= viewport["width"], (name, scroll_width)
                assert _min_target_px(page) >= 44, name
                page.screenshot(path=str(SCREENSHOTS / f"rules-{name}.png"), full_page=True)
                assert_accessible(page, f"rules-{name}")
                page.context.close()
        finally:
            browser.close()
