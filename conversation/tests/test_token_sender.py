"""The token sender coalesces fast tokens but never holds one back: a token that arrives right
after another is sent at the latest FLUSH_S later even if nothing follows (a model that pauses,
the tribunal running after the last words) — found against a real llama.cpp server, where the
last word of a reply appeared only when the whole turn had ended."""

from __future__ import annotations

import time

from conversation.consumers import TokenSender


class Socket:
    """What the consumer's ``emit`` does, recorded: each text handed over, with its time."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, str]] = []

    def emit(self, text: str) -> None:
        self.sent.append((time.monotonic(), text))


def test_a_held_token_is_sent_without_waiting_for_the_next_one() -> None:
    socket = Socket()
    sender = TokenSender(socket.emit)
    sender("Hallo")
    sender(" Anna")  # within FLUSH_S of the first: held
    assert [text for _, text in socket.sent] == ["Hallo"]
    deadline = time.monotonic() + 5
    while len(socket.sent) < 2:
        assert time.monotonic() < deadline, "the held token was never sent"
        time.sleep(0.01)
    assert [text for _, text in socket.sent] == ["Hallo", " Anna"]
    sender.flush()  # the turn's end: nothing left, nothing sent twice
    assert len(socket.sent) == 2


def test_fast_tokens_are_still_merged_and_keep_their_order() -> None:
    socket = Socket()
    sender = TokenSender(socket.emit)
    words = [f"w{i} " for i in range(200)]
    for word in words:
        sender(word)
    sender.flush()
    assert "".join(text for _, text in socket.sent) == "".join(words)
    assert len(socket.sent) < len(words)  # coalesced
