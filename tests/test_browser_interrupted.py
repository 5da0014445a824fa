"""A turn whose web process died before it answered (issue 27) in the real web chat (headless
Chromium): under the person's message a note says the answer was interrupted, there is nothing
to copy, and "Noch einmal fragen" sends the same words again as a new turn."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import psutil
import pytest
from django.conf import settings

from conversation import reaper
from conversation.models import Character, Turn
from conversation.vocabulary import Status
from tests.axe import assert_accessible
from tests.chromium import CHROMIUM_ARGS
from tests.factories import SessionFactory, UserFactory
from tests.processes import offline_daphne

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUESTION = "Wie heißt mein Hund?"
SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"


def _dead_owner() -> str:
    proc = subprocess.Popen(["sleep", "60"])
    me = reaper.current_owner()
    owner = reaper.Owner(
        me.host, me.pid_namespace, proc.pid, f"{psutil.Process(proc.pid).create_time():.2f}"
    )
    proc.kill()
    proc.wait()
    return owner.text()


def test_an_interrupted_turn_says_so_and_can_be_asked_again(chromium: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    user: Any = UserFactory(username="anna")
    session = SessionFactory(user=user, character=Character.objects.get(name="Nova"))
    Turn.objects.create(
        session=session,
        role=Turn.Role.USER,
        text=QUESTION,
        status=Status.RUNNING,
        owner=_dead_owner(),
    )
    assert len(reaper.turns_reap()) == 1

    with offline_daphne("test-browser-interrupted-daphne.log") as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.set_default_timeout(60_000)
            page.goto(url + "/")
            page.fill("input[name=username]", "anna")
            page.fill("input[name=password]", "geheim123")
            page.click("button[type=submit]")
            expect(page.locator(".chat")).to_have_class("chat online")

            cut = page.locator(".msg.assistant.interrupted")
            expect(cut.locator(".interrupted-note")).to_have_text(reaper.note_for(reaper.STEP_DEAD))
            expect(cut.get_by_role("button", name="Antwort kopieren")).to_have_count(0)
            assert_accessible(page, "chat-unterbrochen")
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "chat-unterbrochen-desktop.png"))
            # At phone width the note and its button stay visible inside the screen.
            page.set_viewport_size({"width": 390, "height": 844})
            expect(cut.locator(".interrupted-note")).to_be_in_viewport()
            assert_accessible(page, "chat-unterbrochen-phone")
            page.screenshot(path=str(SCREENSHOTS / "chat-unterbrochen-phone.png"))
            page.set_viewport_size({"width": 1366, "height": 900})

            cut.get_by_role("button", name="Dieselbe Nachricht noch einmal an Nova senden").click()
            expect(page.locator(".msg.user")).to_have_count(2)
            expect(page.locator(".msg.user").last).to_have_text(QUESTION)
            expect(page.locator(".msg.assistant:not(.interrupted):not(.streaming)")).to_have_count(
                1
            )
        finally:
            browser.close()

    asked = list(
        Turn.objects.filter(session=session, role="user")
        .order_by("id")
        .values_list("text", "status")
    )
    assert asked[0] == (QUESTION, Status.INTERRUPTED)
    assert asked[1][0] == QUESTION and asked[1][1] != Status.RUNNING
