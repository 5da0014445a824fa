"""The chat page as a product, in headless Chromium at 1366 × 900 and 390 × 844 (issue 15).

One daphne (as in tests/test_browser.py, whose fixtures this reuses) serves both widths. The
desktop walk: first visit, a question with its Quellen, the citation viewer (context lines,
line numbers, the whole file), copy and "Noch einmal fragen", rename, a second chat, search,
delete; then daphne is stopped: the banner says so, a message typed meanwhile stays in the
input and survives a reload, and after the restart "Erneut senden" sends it. The phone walk:
nothing cut off, the drawer with the chat list and "+ Neues Gespräch", the composer in view,
targets of at least 44 px, the citation viewer full screen. axe-core checks every state.
Screenshots: var/screenshots/chat-*-desktop.png and chat-*-phone.png.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import ViewportSize

from conversation.models import Session, Turn
from files.models import FileRoot
from tests.axe import assert_accessible
from tests.chromium import CHROMIUM_ARGS
from tests.processes import free_port
from tests.test_browser import anna, live_server_url  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parent.parent
SCREENSHOTS = BASE_DIR / "var" / "screenshots"
DESKTOP: ViewportSize = {"width": 1366, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}
QUESTION = "Wann kommt der Architekt Brenner?"


class Proxy:
    """A TCP relay in front of daphne that the test can cut off: ``block()`` closes every open
    connection and stops listening (the page sees the server as unreachable: refused
    connections), ``unblock()`` listens again on the same port."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lock = threading.Lock()
        self.open: list[socket.socket] = []
        self.listener: socket.socket | None = None
        self.unblock()

    def unblock(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(32)
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def block(self) -> None:
        with self.lock:
            if self.listener is not None:
                # shutdown() wakes the thread blocked in accept(); close() alone would not,
                # and the port would stay taken.
                with contextlib.suppress(OSError):
                    self.listener.shutdown(socket.SHUT_RDWR)
                self.listener.close()
                self.listener = None
            for conn in self.open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self.open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by block()
            with self.lock:
                if self.listener is not listener:  # blocked meanwhile
                    client.close()
                    return
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
                self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """Her released notes (the fixtures of tests/test_browser.py use this one here): a longer
    hausbau.md, so that the viewer has lines around the cited ones and a whole file."""
    root = tmp_path / "unterlagen"
    root.mkdir()
    (root / "hausbau.md").write_text(
        "# Hausbau\nDonnerstag 14 Uhr: Architekt Brenner\nTreffpunkt Baustelle Lindenweg\n"
        + "".join(f"Notiz {n}: Fliesen, Fenster, Farbe\n" for n in range(4, 13))
    )
    return root


@pytest.fixture
def proxy(live_server_url: str) -> Iterator[Proxy]:  # noqa: F811
    relay = Proxy(int(live_server_url.rsplit(":", 1)[1]))
    try:
        yield relay
    finally:
        relay.block()


def _shot(page: Any, name: str, width: str) -> None:
    page.screenshot(path=str(SCREENSHOTS / f"chat-{name}-{width}.png"))


def _fits(page: Any, selector: str, width: int) -> None:
    """The element is fully inside the viewport horizontally and vertically."""
    box = page.locator(selector).bounding_box()
    height = page.viewport_size["height"]
    assert box is not None, selector
    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (selector, box)
    assert box["y"] >= 0 and box["y"] + box["height"] <= height + 0.5, (selector, box)


def _big_enough(page: Any, selector: str) -> None:
    for box in page.locator(selector).evaluate_all(
        "els => els.filter(e => e.offsetParent !== null)"
        ".map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })"
    ):
        assert box[0] >= 44 and box[1] >= 44, (selector, box)


def test_chat_page_at_desktop_and_phone_width(
    proxy: Proxy,
    anna: tuple[Any, FileRoot],  # noqa: F811
    chromium: str,
) -> None:
    from playwright.sync_api import expect, sync_playwright

    user, root = anna
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    url = proxy.url
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=DESKTOP, reduced_motion="reduce")
            context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
            page = context.new_page()
            page.set_default_timeout(30_000)

            # First visit: the login, then a new chat that welcomes her (load 1–2).
            page.goto(url + "/")
            page.fill("input[name=username]", "anna")
            page.fill("input[name=password]", "geheim123")
            page.click("button[type=submit]")
            expect(page.locator(".chat")).to_have_class(re.compile(r"\bonline\b"))
            expect(page.locator("h1")).to_have_count(1)
            expect(page.locator("#chat-title")).to_have_text("Neues Gespräch")
            expect(page.locator("#welcome .example")).to_have_count(3)
            expect(page.locator("#roots")).to_contain_text(root.path)
            assert_accessible(page, "chat-welcome-desktop")
            _shot(page, "welcome", "desktop")

            # A question: the reply with its Quellen, announced once when done, the chat named
            # after it; copy and "Noch einmal fragen" under the reply.
            page.fill("#text", QUESTION)
            page.keyboard.press("Enter")
            reply = page.locator(".msg.assistant").last
            expect(reply.locator(".citation")).to_have_text("hausbau.md:2-3")
            expect(page.locator("#announce")).to_contain_text("Nova antwortet:")
            expect(page.locator("#chat-title")).to_have_text(QUESTION)
            expect(page.locator("#chat-list li.active .chat-name")).to_have_text(QUESTION)
            reply.locator("button.copy").click()
            expect(reply.locator("button.copy")).to_have_text("Kopiert")
            copied = page.evaluate("() => navigator.clipboard.readText()")
            assert "nicht meine Erinnerung" in copied and "<" not in copied
            reply.locator("button.regenerate").click()
            expect(page.locator(".msg.user")).to_have_count(2)
            expect(page.locator(".msg.user").last).to_have_text(QUESTION)
            expect(page.locator(".msg.assistant")).to_have_count(2)
            expect(page.locator(".msg.assistant").last.locator(".citation")).to_have_count(1)
            # Only the last reply offers to ask again.
            expect(page.locator("button.regenerate")).to_have_count(1)
            assert_accessible(page, "chat-reply-desktop")
            _shot(page, "reply", "desktop")

            # The citation: its lines marked, three lines of context, line numbers, the path
            # inside the folder and the folder; the whole file on request; Escape closes.
            page.locator(".msg.assistant").last.locator(".citation").click()
            viewer = page.locator("#viewer")
            expect(viewer).to_be_visible()
            expect(viewer.locator(".cited .line-text")).to_have_text(
                ["Donnerstag 14 Uhr: Architekt Brenner", "Treffpunkt Baustelle Lindenweg"]
            )
            expect(viewer.locator(".line-no")).to_have_text([str(n) for n in range(1, 7)])
            expect(page.locator("#viewer-path .rel-path")).to_have_text("hausbau.md")
            expect(page.locator("#viewer-path .root-path")).to_have_text(root.path)
            expect(page.locator("#viewer-title")).to_have_text("hausbau.md, Zeilen 2–3")
            assert_accessible(page, "chat-citation-desktop")
            _shot(page, "citation", "desktop")
            page.click("#viewer-whole")
            expect(viewer.locator(".line-no")).to_have_count(12)
            expect(viewer.locator(".cited")).to_have_count(2)
            page.keyboard.press("Escape")
            expect(viewer).to_be_hidden()

            # Rename through the dialog (keyboard only): the heading and the list follow.
            page.click("#rename-open")
            expect(page.locator("#rename-input")).to_be_focused()
            page.keyboard.press("Control+a")
            page.keyboard.type("Termine Hausbau")
            page.keyboard.press("Enter")
            expect(page.locator("#chat-title")).to_have_text("Termine Hausbau")
            expect(page.locator("#chat-list li.active .chat-name")).to_have_text("Termine Hausbau")
            first_chat = page.locator(".chat").get_attribute("data-session")

            # A second chat (load 3); the search finds the first by its text, with the hit.
            page.click(".new-chat button")
            expect(page.locator("#chat-title")).to_have_text("Neues Gespräch")
            expect(page.locator(".chat")).to_have_class(re.compile(r"\bonline\b"))
            page.fill("#text", "Hallo Nova")
            page.keyboard.press("Enter")
            expect(page.locator("#chat-title")).to_have_text("Hallo Nova")
            page.fill("#chat-q", "brenner")
            found = page.locator("#chat-list li")
            expect(found).to_have_count(1)
            expect(found.locator(".chat-name")).to_have_text("Termine Hausbau")
            expect(found.locator(".chat-match")).to_contain_text("Architekt Brenner")
            expect(page.locator("#search-note")).to_have_text("1 Gespräch gefunden.")
            assert_accessible(page, "chat-search-desktop")
            _shot(page, "search", "desktop")
            page.fill("#chat-q", "")
            expect(page.locator("#chat-list li")).to_have_count(2)

            # Delete the second chat: the dialog asks first; Abbrechen keeps it (focus starts
            # there), Löschen removes it and opens the remaining chat (load 4).
            page.click("#delete-open")
            expect(page.locator("#delete-dialog")).to_be_visible()
            expect(page.locator("#delete-dialog button[value=cancel]")).to_be_focused()
            expect(page.locator("#delete-name")).to_have_text("Hallo Nova")
            _shot(page, "delete", "desktop")
            page.keyboard.press("Escape")
            expect(page.locator("#delete-dialog")).to_be_hidden()
            expect(page.locator("#delete-open")).to_be_focused()
            page.click("#delete-open")
            page.click("#delete-dialog button[value=delete]")
            expect(page).to_have_url(f"{url}/chat/{first_chat}/")
            expect(page.locator("#chat-list li")).to_have_count(1)
            expect(page.locator(".chat")).to_have_class(re.compile(r"\bonline\b"))

            # The server goes away: a banner says so and retries by itself; Enter does not
            # silently drop the message: it stays in the input, also across a reload (load 5).
            proxy.block()
            banner = page.locator("#conn-banner")
            expect(banner).to_be_visible()
            expect(page.locator("#conn-text")).to_have_text("Keine Verbindung zum Server.")
            expect(page.locator("#conn-countdown")).to_contain_text("Neuer Versuch in")
            page.fill("#text", "Bist du wieder da?")
            page.keyboard.press("Enter")
            expect(page.locator("#conn-text")).to_contain_text("nicht gesendet")
            expect(page.locator("#text")).to_have_value("Bist du wieder da?")
            expect(page.locator("#retry-send")).to_be_visible()
            expect(page.locator(".msg.user")).to_have_count(2)
            assert_accessible(page, "chat-offline-desktop")
            _shot(page, "offline", "desktop")
            proxy.unblock()
            page.reload()
            expect(page.locator("#text")).to_have_value("Bist du wieder da?")
            expect(page.locator(".chat")).to_have_class(re.compile(r"\bonline\b"))
            # Without a reload: stop again, and "Erneut senden" sends once the server is back.
            proxy.block()
            expect(banner).to_be_visible()
            page.focus("#text")
            page.keyboard.press("Enter")
            expect(page.locator("#retry-send")).to_be_visible()
            proxy.unblock()
            page.click("#retry-send")
            expect(banner).to_be_hidden()
            expect(page.locator(".msg.user").last).to_have_text("Bist du wieder da?")
            expect(page.locator(".msg.assistant")).to_have_count(3)
            expect(page.locator("#text")).to_have_value("")
            expect(page.locator("#retry-send")).to_be_hidden()

            # Phone width (load 6): nothing wider than the screen, the composer and Send in
            # view, the drawer with the chat list and "+ Neues Gespräch", large targets.
            phone = context.new_page()
            phone.set_viewport_size(PHONE)
            phone.set_default_timeout(30_000)
            phone.goto(f"{url}/chat/{first_chat}/")
            expect(phone.locator(".chat")).to_have_class(re.compile(r"\bonline\b"))
            assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
            for selector in ("#composer", "#send", "#text", "#drawer-open", "#chat-title"):
                _fits(phone, selector, PHONE["width"])
            expect(phone.locator("#drawer")).not_to_be_in_viewport()
            _big_enough(phone, "#send, .icon-btn, .reply-actions button, .citation.chip, .top a")
            assert_accessible(phone, "chat-phone")
            _shot(phone, "reply", "phone")
            phone.click("#drawer-open")
            expect(phone.locator("#drawer")).to_be_in_viewport()
            expect(phone.locator(".new-chat button")).to_be_focused()
            expect(phone.locator("#drawer-open")).to_have_attribute("aria-expanded", "true")
            _fits(phone, ".new-chat button", PHONE["width"])
            expect(phone.locator("#chat-list li")).to_have_count(1)
            _big_enough(phone, "#drawer .new-chat button, #chat-list a, #chat-q, #drawer-close")
            # Focus stays inside the open drawer: the rest of the page is inert.
            for _ in range(6):
                phone.keyboard.press("Tab")
                inside = phone.evaluate(
                    "() => document.getElementById('drawer').contains(document.activeElement)"
                )
                assert inside
            assert_accessible(phone, "chat-drawer-phone")
            _shot(phone, "drawer", "phone")
            phone.keyboard.press("Escape")
            expect(phone.locator("#drawer")).not_to_be_in_viewport()
            expect(phone.locator("#drawer-open")).to_be_focused()

            # The citation viewer fills the phone screen, with a large close target.
            phone.locator(".msg.assistant .citation").first.click()
            expect(phone.locator("#viewer .cited")).to_have_count(2)
            box = phone.locator("#viewer").bounding_box()
            assert box is not None and box["width"] >= PHONE["width"] - 1
            assert box["height"] >= PHONE["height"] - 1
            _big_enough(phone, "#viewer .close")
            assert_accessible(phone, "chat-citation-phone")
            _shot(phone, "citation", "phone")
            phone.locator("#viewer .close").click()
            expect(phone.locator("#viewer")).to_be_hidden()

            # The welcome of a new chat at phone width (load 7).
            phone.locator("#drawer-open").click()
            phone.locator(".new-chat button").click()
            expect(phone.locator("#welcome")).to_be_visible()
            _fits(phone, "#send", PHONE["width"])
            assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
            assert_accessible(phone, "chat-welcome-phone")
            _shot(phone, "welcome", "phone")
        finally:
            browser.close()
    assert Session.objects.filter(user=user).count() == 2
    kept = Session.objects.get(pk=int(first_chat or 0))
    assert kept.title == "Termine Hausbau"
    assert list(
        Turn.objects.filter(session=kept, role=Turn.Role.USER).values_list("text", flat=True)
    ) == [QUESTION, QUESTION, "Bist du wieder da?"]
