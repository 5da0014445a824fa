"""The router's patterns: directive orders route to the agent, ordinary chat does not."""

from __future__ import annotations

import pytest

from directives.agent.detect import detect

ORDERS = [
    "Sprich nie von Milch!",
    "Sag nie wieder Schatz zu mir",
    "Nenn mich nie Schatz",
    "Sieze mich immer",
    "Sieze mich bitte",
    "Ab jetzt nenn mich Boss",
    "Nenn mich ab jetzt Boss",
    "Bitte sieze mich ab sofort",
    "Nova, sag nie wieder Schatz",
    "Ich mag dich, aber sag nie wieder Schatz",
    "Du sollst nie wieder über Politik reden",
    "Du darfst mich nie Schatzi nennen",
    "Ich will, dass du immer kurz antwortest",
    "Sag das nie mehr!",
    "Red nicht mehr über das Wetter",
    "Hör auf damit!",
    "Hör bitte auf, mich zu duzen",
    "Lass das!",
    "Vergiss die Siez-Regel",
    "Lösch die Siez-Direktive",
    "Du darfst wieder über Milch reden",
    "Welche Regeln hast du?",
    "Was sind meine Direktiven?",
    "Stelle sie wieder her",
    "Mach die letzte Änderung rückgängig",
    "Ändere die Regel 'Chef' in 'Boss'",
    "Siezen Sie mich bitte immer",
    "Kannst du mich ab jetzt siezen?",
]

CHAT = [
    "Ich war noch nie in Rom",
    "Ich gehe immer joggen",
    "Hallo Nova!",
    "Mein Bruder sagt immer, ich soll mehr schlafen",
    "Du bist immer so nett zu mir",
    "Das hat nie funktioniert",
    "Ich hör auf zu rauchen",
    "Ich lass das mal so",
    "Lass uns immer zusammen kochen",
    "Welche Regeln gelten beim Schach?",
    "Ich trinke keine Milch mehr",
    "Immer diese Baustellen!",
    "Wir waren ab jetzt jeden Tag im Büro",
    "Meine Regel ist: nie vor neun aufstehen",
    "Ich mache mir keine Regeln",
    "",
]


@pytest.mark.parametrize("text", ORDERS)
def test_orders_route_to_the_agent(text: str) -> None:
    assert detect(text) is True


@pytest.mark.parametrize("text", CHAT)
def test_ordinary_chat_does_not_route_to_the_agent(text: str) -> None:
    assert detect(text) is False
