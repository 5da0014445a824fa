"""Node: the conversation vector — strategy (what), intent (why), vehicle (how) — and the
guiding thought (Leitgedanke) for the composer. A small structured model call; the offline
backend answers it by rules (same JSON, read by the same checked reader).

The call depends only on the history and the person's words, not on memory or records, so
``start`` sends it before retrieval and ``run`` takes its answer after (issue 16: the time to
first token pays for the longer of the two, not for both). Only the HTTP wait runs beside the
turn's thread; every database read and write (the log row included) stays on it. The composer
still runs after ``run`` (seed 003 §2: the vector is decided before the composer executes it),
and the request is the one the node would have sent in its place.
"""

from __future__ import annotations

import contextvars
import json
import re
import threading
import time
from typing import Any

from django.db import connections

from conversation.pipeline import fallback
from conversation.pipeline.logging import NodeStart, node_log
from conversation.pipeline.state import ConversationVector, TurnState
from conversation.prompts.blocks import topics
from conversation.vocabulary import ModelFault, NodeOutcome
from novaberg import llm
from novaberg.parsers import loads_checked

STRATEGIES = (
    "informieren",
    "erledigen",
    "begleiten",
    "vertiefen",
    "spiegeln",
    "erinnern",
    "widersprechen",
)
INTENTS = ("knowledge", "task", "emotional", "social")
VEHICLES = ("aussage", "frage", "schweigen")

INSTRUCTION = f"""[GESPRAECHSVEKTOR-ANALYSE]
Bestimme für die nächste Antwort von Nova an den Nutzer:
- "strategie": eine aus {", ".join(STRATEGIES)}
- "absicht": eine aus {", ".join(INTENTS)}
- "vehikel": eine aus {", ".join(VEHICLES)}
- "impuls": ein Satz, was der Nutzer gerade tut (eine Beobachtung über ihn, kein Antworttext)
Antworte nur mit einem JSON-Objekt mit genau diesen vier Schlüsseln."""

_W_WORDS = re.compile(
    r"^\s*(wer|was|wann|wo|wie|warum|weshalb|wieso|welche[rsmn]?|woher|wohin|weißt du)\b", re.I
)
_TASK = re.compile(
    r"^\s*(bitte|kannst du|könntest du|mach|zeig|such|find|lies|schreib|erinnere mich)\b", re.I
)
_FEELING = re.compile(
    r"\b(traurig|müde|erschöpft|angst|sorge|sorgen|einsam|wütend|ärger|gestresst|glücklich|"
    r"froh|freue|vermisse|weinen|allein)\b",
    re.I,
)


def rules(text: str, *, has_memory: bool = False) -> dict[str, str]:
    """The deterministic conversation vector (offline backend and fallback)."""
    subject = ", ".join(topics(text))
    about = f" ({subject})" if subject else ""
    if _TASK.search(text):
        intent, strategy, vehicle = "task", "erledigen", "aussage"
        impulse = f"Der Nutzer bittet um etwas Konkretes{about}."
    elif _FEELING.search(text):
        intent, strategy, vehicle = "emotional", "begleiten", "aussage"
        impulse = "Der Nutzer teilt mit, wie es ihm geht."
    elif text.rstrip().endswith("?") or _W_WORDS.search(text):
        intent, vehicle = "knowledge", "aussage"
        strategy = "erinnern" if has_memory else "informieren"
        impulse = f"Der Nutzer möchte etwas wissen{about}."
    else:
        intent, strategy, vehicle = "social", "vertiefen", "frage"
        impulse = f"Der Nutzer erzählt von sich{about}."
    return {"strategie": strategy, "absicht": intent, "vehikel": vehicle, "impuls": impulse}


def read_vector(raw: str) -> tuple[dict[str, str] | None, str]:
    """Checked reader: (vector, "") or (None, named step)."""
    try:
        data: Any = loads_checked(raw)
    except ValueError:
        return None, "kein_json"
    if not isinstance(data, dict):
        return None, "kein_objekt"
    allowed = {"strategie": STRATEGIES, "absicht": INTENTS, "vehikel": VEHICLES}
    out: dict[str, str] = {}
    for key, values in allowed.items():
        value = data.get(key)
        if value is None:
            return None, f"{key}_fehlt"
        if not isinstance(value, str):
            return None, "feld_falscher_typ"
        if value.strip().lower() not in values:
            return None, f"{key}_unbekannt"
        out[key] = value.strip().lower()
    impulse = data.get("impuls")
    if not isinstance(impulse, str) or not impulse.strip():
        return None, "impuls_fehlt"
    out["impuls"] = impulse.strip()[:300]
    return out, ""


def _offline(messages: list[dict[str, str]], hints: dict[str, Any]) -> str:
    return json.dumps(rules(str(hints.get("text") or ""), has_memory=bool(hints.get("memory"))))


llm.register_offline("conversation_vector", _offline)


# state.extra key: the call ``start`` sent, for ``run`` to take.
FLIGHT_KEY = "_vector_call"


def messages_for(state: TurnState) -> list[dict[str, str]]:
    tail = state.history[-4:]
    context = "\n".join(f"{m['role']}: {m['content'][:300]}" for m in tail)
    return [
        {"role": "system", "content": INSTRUCTION},
        {"role": "user", "content": f"{context}\nuser: {state.text}".strip()},
    ]


def _hints(state: TurnState) -> dict[str, Any]:
    # Read by the offline backend only (its rules ask whether memory was found), which is
    # never sent ahead (``start``): the request a server sees is the same either way.
    return {"text": state.text, "memory": bool(state.memories)}


def _ask(
    gateway: llm.Gateway, messages: list[dict[str, str]], hints: dict[str, Any]
) -> llm.ChatResult:
    return gateway.chat(
        messages, purpose="conversation_vector", json_mode=True, hints=hints, max_tokens=200
    )


class _Flight:
    """The model call ``start`` sent: a thread that only waits for the HTTP answer. It runs in
    a copy of the turn's context, so the turn's ``llm.cancel_scope`` (Stop, a disconnect, the
    deadline) ends it as it would end the call made in place."""

    def __init__(
        self, gateway: llm.Gateway, messages: list[dict[str, str]], state: TurnState
    ) -> None:
        self.messages = messages
        self.began = NodeStart.now()
        self.ms = 0  # the call's own time, set when its answer came
        self._done = threading.Event()
        self._answer: list[llm.ChatResult | BaseException] = []
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run,
            args=(self._work, gateway, _hints(state)),
            name="vector-call",
            daemon=True,
        )
        self._thread.start()

    def _work(self, gateway: llm.Gateway, hints: dict[str, Any]) -> None:
        try:
            self._answer.append(_ask(gateway, self.messages, hints))
        except BaseException as exc:  # handed to the turn's thread, raised there
            self._answer.append(exc)
        finally:
            self.ms = int((time.perf_counter() - self.began.t0) * 1000)
            self._done.set()
            # Django opens a connection per thread; this one must not keep one open.
            connections.close_all()

    def result(self) -> llm.ChatResult:
        """The answer; waits for it. The call ends by itself on a Stop or at its deadline."""
        self._done.wait()
        answer = self._answer[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer


def start(state: TurnState) -> TurnState:
    """Send the vector's model call ahead, before retrieval (no log row: ``run`` writes the
    node's one row, dated from here). Sent only where ``run`` would send it: no question is
    going out, a model is configured (the offline rules take no time and need the memories)
    and it was not found down earlier in the turn."""
    state.extra.pop(FLIGHT_KEY, None)
    gateway = llm.get_gateway()
    if state.asks or gateway.name == "offline" or fallback.down_this_turn(state.extra):
        return state
    state.extra[FLIGHT_KEY] = _Flight(gateway, messages_for(state), state)
    return state


def run(state: TurnState) -> TurnState:
    flight = state.extra.pop(FLIGHT_KEY, None)
    with node_log(state, "gespraechsvektor") as log:
        if state.asks:
            log.outcome = NodeOutcome.SKIPPED_QUESTION
            return state
        gateway = llm.get_gateway()
        data: dict[str, str] | None = None
        fault: ModelFault | None = None
        step = ""
        down = fallback.down_this_turn(state.extra) if gateway.name != "offline" else None
        if isinstance(flight, _Flight):
            # Sent ahead by ``start``: the row is dated from the call's start and lasts as long
            # as the call did, so the waterfall shows it beside retrieval.
            log.began = flight.began
            result: llm.ChatResult | None = flight.result()
            log.details["vorab_gesendet"] = True
        elif down is not None:
            # The model was unreachable or too slow earlier in this turn: do not wait again.
            result, step, fault = None, f"uebersprungen_{down}", ModelFault.DOWN_THIS_TURN
        else:
            result = _ask(gateway, messages_for(state), _hints(state))
        taken = time.perf_counter()
        if result is not None:
            if not result.ok:
                step = f"llm_{result.failure.step}" if result.failure else "llm_fehler"
                fault = fallback.fault_of(result.failure)
                fallback.note_down(state.extra, fault)
            else:
                data, step = read_vector(result.text)
                if data is None:
                    fault = fallback.fault_of_reading(step)
        source = "llm" if gateway.name != "offline" else "regeln"
        if data is None:
            # A failed or unreadable answer is named; the rules (the node's offline
            # implementation) still give the composer a vector.
            data, source = rules(state.text, has_memory=bool(state.memories)), "regeln"
            log.outcome = NodeOutcome.OFFLINE_FALLBACK
            log.fallback(fault or ModelFault.OTHER, step=step)
        else:
            log.outcome = "bestimmt"
        state.vector = ConversationVector(
            strategy=data["strategie"],
            intent=data["absicht"],
            vehicle=data["vehikel"],
            impulse=data["impuls"],
            source=source,
            first=data["absicht"] == "task",
        )
        log.details.update(
            {
                **data,
                "quelle": source,
                "backend": gateway.name,
                "bitte_zuerst": state.vector.first,
            }
        )
        if isinstance(flight, _Flight):
            log.ms = flight.ms + int((time.perf_counter() - taken) * 1000)
    return state
