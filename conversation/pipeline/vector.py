"""Node: the conversation vector — strategy (what), intent (why), vehicle (how) — and the
guiding thought (Leitgedanke) for the composer. A small structured model call; the offline
backend answers it by rules (same JSON, read by the same checked reader)."""

from __future__ import annotations

import json
import re
from typing import Any

from conversation.pipeline import fallback
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import ConversationVector, TurnState
from conversation.prompts.blocks import topics
from conversation.vocabulary import ModelFault, NodeOutcome
from novaberg import llm

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
        data: Any = json.loads(raw)
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


def run(state: TurnState) -> TurnState:
    with node_log(state, "gespraechsvektor") as log:
        if state.asks:
            log.outcome = NodeOutcome.SKIPPED_QUESTION
            return state
        tail = state.history[-4:]
        context = "\n".join(f"{m['role']}: {m['content'][:300]}" for m in tail)
        messages = [
            {"role": "system", "content": INSTRUCTION},
            {"role": "user", "content": f"{context}\nuser: {state.text}".strip()},
        ]
        gateway = llm.get_gateway()
        data: dict[str, str] | None = None
        fault: ModelFault | None = None
        down = fallback.down_this_turn(state.extra) if gateway.name != "offline" else None
        if down is not None:
            # The model was unreachable or too slow earlier in this turn: do not wait again.
            step, fault = f"uebersprungen_{down}", ModelFault.DOWN_THIS_TURN
        else:
            result = gateway.chat(
                messages,
                purpose="conversation_vector",
                json_mode=True,
                hints={"text": state.text, "memory": bool(state.memories)},
                max_tokens=200,
            )
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
    return state
