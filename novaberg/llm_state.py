"""The chat model's real state in this process, for the header badge (issue 13).

``novaberg.llm`` records every call of a configured model here (its outcome and milliseconds,
beside the deadline of its purpose) and every reachability probe (``llm.ping``: /healthz and
the badge's endpoint). From the last few of them the badge reads one of: erreichbar, langsam,
nicht erreichbar — or "ungeprüft" while nothing is known yet. A model that answered, but late,
is "langsam"; one that gave no answer at all within its deadline (not a single token) is "nicht
erreichbar" like a refused connection, even while its server still lists its models (issue 27).
The offline backend is "Offline-Modus" and records nothing.

Per process and in memory on purpose: the badge says what this server saw lately, it is not a
history (the turn's pipeline log is).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from enum import StrEnum

RECENT = 20  # outcomes kept
WINDOW = 5  # outcomes the state is read from
MAX_AGE_S = 600.0  # older outcomes say nothing about now
PROBE_MAX_AGE_S = 15.0  # the badge's endpoint probes again after this long without news
SLOW_SHARE = 0.5  # a call that used more than half of its purpose's deadline was slow

# Outcomes (``LLMFailure.step``) that say the model did not answer at all.
_UNREACHABLE = frozenset({"verbindung", "http_fehler"})
# Outcomes that say it answered too slowly — or, with ``answered=False``, not at all.
_TOO_SLOW = frozenset({"zeitueberschreitung", "zeitlimit_erstes_token", "zeitlimit_antwort"})
# Outcomes that say nothing about the model: the person stopped, the caller stopped reading.
_NEUTRAL = frozenset({"abgebrochen", "abgebrochen_vom_aufrufer", "offline_kein_handler"})
PROBE = "probe"


class ModelState(StrEnum):
    OFFLINE = "offline"
    UNKNOWN = "ungeprueft"
    REACHABLE = "erreichbar"
    SLOW = "langsam"
    UNREACHABLE = "nicht_erreichbar"


LABELS: dict[ModelState, str] = {
    ModelState.OFFLINE: "Offline-Modus",
    ModelState.UNKNOWN: "Sprachmodell",
    ModelState.REACHABLE: "Sprachmodell erreichbar",
    ModelState.SLOW: "Sprachmodell langsam",
    ModelState.UNREACHABLE: "Sprachmodell nicht erreichbar",
}

# A sentence for the badge's tooltip and for the chat (what the state means for the person).
SENTENCES: dict[ModelState, str] = {
    ModelState.OFFLINE: (
        "Kein Sprachmodell angebunden: Nova antwortet regelbasiert aus Regeln und Ordnern."
    ),
    ModelState.UNKNOWN: "Das Sprachmodell wurde noch nicht geprüft.",
    ModelState.REACHABLE: "Das Sprachmodell antwortet.",
    ModelState.SLOW: "Das Sprachmodell antwortet langsam; Antworten können dauern.",
    ModelState.UNREACHABLE: (
        "Das Sprachmodell antwortet nicht; Nova antwortet so lange im Offline-Modus."
    ),
}


@dataclass(frozen=True)
class Outcome:
    at: float  # time.monotonic()
    purpose: str  # the call's purpose, or "probe"
    outcome: str  # "ok" or the failure step
    ms: int
    limit_ms: int  # the purpose's deadline (0 for a probe)
    # False when a timed-out call got nothing at all from the model: no body, no token.
    answered: bool = True


_lock = threading.Lock()
_recent: deque[Outcome] = deque(maxlen=RECENT)


def record_call(
    *, purpose: str, outcome: str, ms: int, limit_ms: int, answered: bool = True
) -> None:
    """One finished call of the configured model (``novaberg.llm`` calls this for each);
    ``answered`` is False for a timeout before the model sent anything."""
    if outcome in _NEUTRAL:
        return
    with _lock:
        _recent.append(Outcome(time.monotonic(), purpose, outcome, ms, limit_ms, answered))


def record_probe(*, ok: bool, ms: int) -> None:
    """One reachability probe (a GET of the model list)."""
    with _lock:
        _recent.append(Outcome(time.monotonic(), PROBE, "ok" if ok else "verbindung", ms, 0))


def recent() -> list[Outcome]:
    """The outcomes still telling something about now, newest first."""
    now = time.monotonic()
    with _lock:
        items = list(_recent)
    return [item for item in reversed(items) if now - item.at <= MAX_AGE_S]


def reset() -> None:
    """Forget everything (tests; a changed model address)."""
    with _lock:
        _recent.clear()


def _unanswered(item: Outcome) -> bool:
    return item.outcome in _TOO_SLOW and not item.answered


def _slow(item: Outcome) -> bool:
    if item.outcome in _TOO_SLOW:
        return True
    return item.outcome == "ok" and item.limit_ms > 0 and item.ms > SLOW_SHARE * item.limit_ms


def state_of(items: list[Outcome]) -> ModelState:
    """The state the newest outcomes (newest first) show: the newest decides whether the model
    answers at all; any slow one among the last few makes it "langsam". The newest call that
    got no answer at all within its deadline keeps it "nicht erreichbar" after a probe that
    succeeded: the server listing its models says nothing about whether the model answers."""
    if not items:
        return ModelState.UNKNOWN
    if items[0].outcome in _UNREACHABLE:
        return ModelState.UNREACHABLE
    newest_call = next((item for item in items if item.purpose != PROBE), None)
    if newest_call is not None and _unanswered(newest_call):
        return ModelState.UNREACHABLE
    if any(_slow(item) for item in items[:WINDOW]):
        return ModelState.SLOW
    return ModelState.REACHABLE


def current(*, offline: bool) -> ModelState:
    """The badge's state, from what this process saw (no network)."""
    if offline:
        return ModelState.OFFLINE
    return state_of(recent())


def probe_if_stale(*, offline: bool) -> ModelState:
    """The badge's state; without news for ``PROBE_MAX_AGE_S`` the model is probed first (a
    GET of the model list, 2 s at most)."""
    if offline:
        return ModelState.OFFLINE
    items = recent()
    if not items or time.monotonic() - items[0].at > PROBE_MAX_AGE_S:
        from novaberg import llm  # llm records here; imported late to keep the arrow one way

        llm.ping()  # records its probe
        items = recent()
    return state_of(items)
