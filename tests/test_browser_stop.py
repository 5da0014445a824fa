"""Stop mid-reply in the real web chat (headless Chromium via playwright), at desktop and phone
width: the Stop button is there only while a reply streams, pressing it ends the reply (the
model's stream is closed upstream), and the partial reply stays, marked "abgebrochen".

Daphne runs against the test database with the fake OpenAI-compatible server as its model,
which talks without end. Screenshots: var/screenshots/stop-*.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conversation.models import Character, Turn
from conversation.vocabulary import Status
from tests.chromium import CHROMIUM_ARGS
from tests.factories import SessionFactory, UserFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.processes import free_port, log_dir, start_daphne, stop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parent.parent
SCREENSHOTS = BASE_DIR / "var" / "screenshots"
# Whole sentences: the sentence guard sends a reply sentence by sentence.
STORY = "Es war einmal ein Berg am See. Auf dem Berg stand ein kleines Haus. "


@pytest.fixture
def live_server_url(chromium: str, _fake_openai_server: FakeOpenAI) -> Iterator[str]:
    port = free_port()
    proc = start_daphne(
        port,
        log_path=log_dir() / "test-browser-stop-daphne.log",
        NOVABERG_LLM_BASE_URL=_fake_openai_server.base_url,
        NOVABERG_LLM_API_KEY="test",
        NOVABERG_LLM_MODEL="fake-model",
        NOVABERG_LLM_MAX_RETRIES="0",
        NOVABERG_LOG_LEVEL="WARNING",
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def test_stop_mid_reply_at_desktop_and_phone_width(
    chromium: str, live_server_url: str, fake_openai: FakeOpenAI
) -> None:
    from playwright.sync_api import expect, sync_playwright

    user = UserFactory(username="anna")
    SessionFactory(user=user, character=Character.objects.get(name="Nova"))
    fake_openai.add(
        STORY, endless=True, chunk_delay_s=0.03, times=2, match=lambda b: bool(b.get("stream"))
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    boxes: list[dict[str, float] | None] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.set_default_timeout(30_000)
            page.goto(live_server_url + "/")
            page.fill("input[name=username]", "anna")
            page.fill("input[name=password]", "geheim123")
            page.click("button[type=submit]")
            expect(page.locator(".chat")).to_have_class("chat online")
            stop_button = page.get_by_role("button", name="Antwort stoppen")
            expect(stop_button).to_be_hidden()

            for width, height, name in ((1366, 900, "desktop"), (390, 844, "phone")):
                page.set_viewport_size({"width": width, "height": height})
                page.fill("#text", f"Erzähl mir eine lange Geschichte ({name}).")
                page.click("#send")
                streaming = page.locator(".msg.assistant.streaming .text")
                expect(streaming).to_contain_text("Auf dem Berg stand ein kleines Haus.")
                expect(stop_button).to_be_visible()
                expect(page.locator("#send")).to_be_disabled()
                expect(page.locator("#status")).not_to_have_text("Die Antwort wurde gestoppt.")
                boxes.append(stop_button.bounding_box())
                page.screenshot(path=str(SCREENSHOTS / f"stop-{name}-laeuft.png"))
                stop_button.click()
                stopped = page.locator(".msg.assistant.stopped").last
                expect(stopped.locator(".stopped-note")).to_have_text("abgebrochen")
                expect(stopped.locator(".text")).to_contain_text("Es war einmal ein Berg am See.")
                expect(stop_button).to_be_hidden()
                expect(page.locator("#send")).to_be_enabled()
                expect(page.locator("#status")).to_have_text("Die Antwort wurde gestoppt.")
                page.screenshot(path=str(SCREENSHOTS / f"stop-{name}.png"))

            # After a reload the stopped replies keep their mark.
            page.reload()
            expect(page.locator(".msg.assistant.stopped .stopped-note")).to_have_count(2)
        finally:
            browser.close()

    for box, width in zip(boxes, (1366, 390), strict=True):
        assert box is not None and box["height"] >= 44 and box["width"] >= 44
        assert box["x"] >= 0 and box["x"] + box["width"] <= width  # on screen, also on a phone
    assert fake_openai.wait_for_disconnect(timeout_s=5)
    turns: list[Any] = list(
        Turn.objects.filter(session__user=user, role="user").values_list("status", "step")
    )
    assert turns == [(Status.CANCELLED, "stopp"), (Status.CANCELLED, "stopp")]
