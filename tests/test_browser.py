"""The real web chat in headless Chromium (Debian `chromium`, driven by playwright's Python API).

Daphne runs in a subprocess against the test database (committed rows: ``transactional_db``)
and the test's Redis db. The test logs in, sends a message and watches the reply stream, answers
a confirmation question with the "Ja" button, opens a citation, and saves a screenshot under
var/screenshots/. Without Chromium the test is skipped, except under CI=true and `make test`,
where it fails with the reason (tests/chromium.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conversation.models import Character, PendingQuestion, Turn
from directives.models import Directive
from files.models import FileRoot
from tests.chromium import CHROMIUM_ARGS
from tests.factories import UserFactory
from tests.processes import free_port, log_dir, start_daphne, stop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parent.parent
SCREENSHOTS = BASE_DIR / "var" / "screenshots"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "unterlagen"
    root.mkdir()
    (root / "hausbau.md").write_text(
        "# Hausbau\nDonnerstag 14 Uhr: Architekt Brenner\nTreffpunkt Baustelle Lindenweg\n"
    )
    return root


@pytest.fixture
def anna(notes: Path) -> tuple[Any, FileRoot]:
    nova = Character.objects.get(name="Nova")  # tests/fixtures.py restores her after a flush
    user = UserFactory(username="anna")
    root = FileRoot.objects.create(
        user=user, character=nova, path=str(notes.resolve()), eigentum="nutzer", state="aktiv"
    )
    return user, root


@pytest.fixture
def live_server_url(chromium: str, anna: tuple[Any, FileRoot], notes: Path) -> Iterator[str]:
    port = free_port()
    proc = start_daphne(
        port,
        log_path=log_dir() / "test-daphne.log",
        application="conversation.tests.browser_asgi:application",
        NOVABERG_FILES_BOUNDARY=str(notes.parent.resolve()),
        NOVABERG_LLM_BASE_URL="",
        NOVABERG_BROWSER_ROOT_ID=str(anna[1].pk),
        NOVABERG_LOG_LEVEL="WARNING",
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def test_chat_in_a_real_browser(
    chromium: str, live_server_url: str, anna: tuple[Any, FileRoot]
) -> None:
    from playwright.sync_api import expect, sync_playwright

    user, root = anna
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            page.set_default_timeout(30_000)
            streamed: list[str] = []
            page.on(
                "websocket",
                lambda ws: ws.on(
                    "framereceived",
                    lambda payload: streamed.append(str(payload)),
                ),
            )

            # Log in.
            page.goto(live_server_url + "/")
            expect(page).to_have_url(live_server_url + "/login/?next=/")
            page.fill("input[name=username]", "anna")
            page.fill("input[name=password]", "geheim123")
            page.click("button[type=submit]")
            expect(page.locator(".chat")).to_have_class("chat online")
            expect(page.locator("#backend-label")).to_have_text("Offline-Modus")
            expect(page.locator("#roots")).to_contain_text(root.path)

            # A new chat welcomes her; an example prompt fills the input, she sends it herself.
            expect(page.locator("#welcome h2")).to_have_text("Hallo, ich bin Nova.")
            expect(page.locator("#welcome .example")).to_have_count(3)
            page.screenshot(path=str(SCREENSHOTS / "chat-welcome.png"))
            page.locator("#welcome .example").first.click()
            expect(page.locator("#text")).to_have_value(
                "Ab sofort antworte mir bitte immer kurz und knapp."
            )
            # No developer details for a person without staff rights.
            assert page.locator("#dev-toggle").count() == 0

            # A message; the reply streams (token frames before the done frame), with records.
            page.fill("#text", "Wann kommt der Architekt Brenner? <b>fett</b>")
            page.click("#send")
            reply = page.locator(".msg.assistant").last
            expect(reply.locator(".citation")).to_have_text("hausbau.md:2-3")
            expect(reply.locator(".text")).to_contain_text("nicht meine Erinnerung")
            # The finished reply is rendered (the records as a list), with its Quellen chip.
            expect(reply.locator(".text.md li")).to_have_count(1)
            expect(reply.locator(".records-label")).to_have_text("Quellen")
            expect(page.locator("#welcome")).to_have_count(0)
            assert reply.locator(".meta").count() == 0
            kinds = [
                '"type": "token"' in f and "token" or '"type": "done"' in f and "done" or "other"
                for f in streamed
            ]
            # Offline tokens come at once and are coalesced into few frames; the consumer tests
            # assert frame-per-token streaming against the fake server's paced stream.
            assert "token" in kinds and kinds.index("done") > kinds.index("token")
            # The person's HTML stays text.
            expect(page.locator(".msg.user").last).to_have_text(
                "Wann kommt der Architekt Brenner? <b>fett</b>"
            )
            assert page.locator(".msg.user b").count() == 0

            # The citation opens the lines from the released file.
            reply.locator(".citation").click()
            expect(page.locator("#viewer .cited .line-text")).to_have_text(
                ["Donnerstag 14 Uhr: Architekt Brenner", "Treffpunkt Baustelle Lindenweg"]
            )
            page.screenshot(path=str(SCREENSHOTS / "citation.png"))
            page.locator("#viewer .close").click()

            # A confirmation question arrives word for word; "Ja" answers it in words.
            page.fill("#text", "Merke dir: Fliesen bestellen")
            page.click("#send")
            question = page.locator(".msg.assistant.question").last
            expect(question.locator(".text")).to_have_text(
                "Soll ich mir „Fliesen bestellen“ als Notiz merken? (ja/nein)"
            )
            question.locator("button.quick-ja").click()
            expect(page.locator(".msg.user").last).to_have_text("Ja")
            expect(page.locator(".msg.assistant").last.locator(".text")).to_have_text(
                "Erledigt: „Fliesen bestellen“ ist notiert."
            )

            page.screenshot(path=str(SCREENSHOTS / "chat.png"), full_page=True)

            # A rule by chat: asked first, word for word; written only on "Ja".
            page.fill("#text", "Sprich nie von Milch")
            page.click("#send")
            question = page.locator(".msg.assistant.question").last
            expect(question.locator(".text")).to_contain_text("Soll ich das so machen?")
            question.locator("button.quick-ja").click()
            expect(page.locator(".msg.assistant").last.locator(".text")).to_have_text(
                "Erledigt: Ab jetzt gilt die Direktive 'Sprich nie von Milch'."
            )
            expect(page.locator("#directives")).to_contain_text("Sprich nie von Milch")
            page.screenshot(path=str(SCREENSHOTS / "chat-rule-desktop.png"))

            # The turn inspector of the first turn: waterfall and prompts.
            # (The ORM cannot run inside playwright's event loop: ids come from the page.)
            first_turn = page.locator(".msg.assistant").first.get_attribute("data-turn")
            session_id = page.locator(".chat").get_attribute("data-session")
            page.goto(f"{live_server_url}/turns/{first_turn}/")
            expect(page.locator(".wf-row")).to_have_count(10)
            expect(page.locator("pre[data-node=composer]").first).to_contain_text(
                "[AUFZEICHNUNGEN]"
            )
            page.screenshot(path=str(SCREENSHOTS / "inspector.png"), full_page=True)

            # Phone width: the chat and the composer still fit.
            phone = browser.new_page(viewport={"width": 390, "height": 800})
            phone.context.add_cookies(page.context.cookies())
            phone.goto(f"{live_server_url}/chat/{session_id}/")
            box = phone.locator("#composer").bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
            phone.screenshot(path=str(SCREENSHOTS / "chat-phone.png"))

            # A rule by chat at phone width, the same way: the question first, then "Ja".
            phone.fill("#text", "Nenn mich Kapitänin")
            phone.click("#send")
            question = phone.locator(".msg.assistant.question").last
            expect(question.locator(".text")).to_contain_text("Soll ich das so machen?")
            buttons = question.locator("button.quick-ja").bounding_box()
            assert buttons is not None and buttons["height"] >= 44
            question.locator("button.quick-ja").click()
            expect(phone.locator(".msg.assistant").last.locator(".text")).to_contain_text(
                "Erledigt: Ab jetzt gilt die Direktive"
            )
            phone.screenshot(path=str(SCREENSHOTS / "chat-rule-phone.png"))
        finally:
            browser.close()
    assert set(PendingQuestion.objects.filter(user=user).values_list("status", flat=True)) == {
        "ausgefuehrt"
    }
    assert sorted(Directive.objects.filter(user=user).values_list("text", flat=True)) == [
        "Nenn mich Kapitänin",
        "Sprich nie von Milch",
    ]
    first = Turn.objects.get(pk=int(first_turn or 0))
    assert first.text.startswith("Wann kommt der Architekt") and first.ttft_ms is not None
