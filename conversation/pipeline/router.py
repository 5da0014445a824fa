"""Node 2: which agent, if any, handles this message; otherwise plain conversation.

Offline, the understanding layer reads the message (``conversation.understanding``: an intent
classifier over German morphology, trained on the labelled corpus's train split, and the
agents' own patterns for plug-ins the corpus does not know). It costs no model call.

With a language model, the model decides (issue 28): every message is put to it in one short
classification call (JSON, ``max_tokens`` small): an order about Nova's behaviour, a files
request, a knowledge request, or conversation. No pattern pre-filter hides a message from it.
Its answer is read by a checked reader with named failures; an unreadable or failed answer falls
back to the offline reading, logged as a named fallback (``ersatz_offline`` with the model's
failure, ``conversation.pipeline.fallback``). The offline reading is also the cross-check: a
disagreement is logged (``abweichung``) and kept in the router's details.
Nothing executes on either reading: a writing agent still asks the person.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from typing import Any

from conversation.agents import Agent, all_agents
from conversation.pipeline.fallback import details as fallback_details
from conversation.pipeline.fallback import fault_of, fault_of_reading, note_down
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState
from conversation.understanding import understand
from conversation.vocabulary import ModelFault
from novaberg.llm import get_gateway
from novaberg.parsers import loads_checked

logger = logging.getLogger(__name__)

PURPOSE = "router.classify"
CONVERSATION = "gespraech"
MAX_TOKENS = 40
MAX_TEXT = 600
PROMPT_MARKER = "[ROUTER]"

# What an agent is for, when it does not say so itself (``route_description``).
_DEFAULT_DESCRIPTIONS = {
    "directives": (
        "ein Auftrag, wie Nova sich verhalten soll: eine Regel anlegen, ändern, aufheben, "
        "wiederherstellen, die Regeln auflisten oder die letzte Änderung rückgängig machen"
    ),
    "files": (
        "einen Ordner freigeben, stilllegen, vergessen, wieder aktivieren oder die "
        "freigegebenen Ordner auflisten"
    ),
    "wissen": (
        "Novas eigenes Wissen: was sie in ihrem Wissen über etwas hat, aus einer Datei lernen "
        "oder einen Absatz aus ihrem Wissen löschen"
    ),
    "dateien_lesen": (
        "aus den freigegebenen Dateien lesen: eine Datei oder einen Abschnitt vorlesen, "
        "darin suchen, fragen, was in einer Datei steht oder ob es eine Datei gibt"
    ),
}


@dataclass(frozen=True)
class RouteReading:
    route: str | None
    step: str = "gelesen"
    reason: str = ""
    action: str = ""
    fault: ModelFault | None = None  # why the model's answer was not used (route is None)


def _description(agent: Agent) -> str:
    own = getattr(agent, "route_description", None)
    if isinstance(own, str) and own.strip():
        return own.strip()
    return _DEFAULT_DESCRIPTIONS.get(agent.name, f"ein Auftrag für {agent.name}")


def messages_for(text: str, agents: list[Agent]) -> list[dict[str, str]]:
    lines = [f'- "{agent.name}": {_description(agent)}' for agent in agents]
    lines.append(f'- "{CONVERSATION}": alles andere — Unterhaltung, Fragen, Erzählungen')
    system = (
        f"{PROMPT_MARKER}\nOrdne die Nachricht des Nutzers an Nova genau einem Ziel zu. "
        "Ein Auftrag ist nur, was Nova tun oder lassen soll; wer nur von sich erzählt "
        '("Ich war noch nie in Rom"), führt ein Gespräch.\nZiele:\n'
        + "\n".join(lines)
        + '\nAntworte NUR mit JSON: {"ziel": "<Ziel>", "aktion": "<kurz>"}'
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": text[:MAX_TEXT]},
    ]


def read_route(answer: str, names: set[str]) -> RouteReading:
    """The checked reader of the router's answer: every failure has a name."""
    body = answer.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", body, re.DOTALL)
    if fence:
        body = fence.group(1)
    try:
        raw: Any = loads_checked(body)
    except ValueError:
        return RouteReading(None, "kein_json", "keine JSON-Antwort")
    if not isinstance(raw, dict):
        return RouteReading(None, "kein_objekt", f"die Antwort ist {type(raw).__name__}")
    route = raw.get("ziel")
    if route is None:
        return RouteReading(None, "ziel_fehlt", "ziel fehlt")
    if not isinstance(route, str):
        return RouteReading(None, "feld_falscher_typ", f"ziel ist {type(route).__name__}")
    route = route.strip().lower()
    if route != CONVERSATION and route not in names:
        return RouteReading(None, "ziel_unbekannt", f"unbekanntes Ziel {route[:40]!r}")
    action = raw.get("aktion")
    if action is not None and not isinstance(action, str):
        return RouteReading(None, "feld_falscher_typ", f"aktion ist {type(action).__name__}")
    return RouteReading(route, action=(action or "")[:40])


def by_patterns(text: str, agents: list[Agent]) -> str:
    """The offline reading's route (kept under its old name for the benchmark and plug-ins)."""
    return understand(text, agents).route


def by_model(text: str, agents: list[Agent]) -> RouteReading:
    result = get_gateway().chat(
        messages_for(text, agents),
        purpose=PURPOSE,
        json_mode=True,
        temperature=0.0,
        max_tokens=MAX_TOKENS,
    )
    if not result.ok:
        step = f"llm_{result.failure.step}" if result.failure else "llm_fehler"
        return RouteReading(
            None, step, "das Sprachmodell hat nicht geantwortet", fault=fault_of(result.failure)
        )
    reading = read_route(result.text, {agent.name for agent in agents})
    if reading.route is None:
        return replace(reading, fault=fault_of_reading(reading.step))
    return reading


def route(text: str, extra: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """(route, details) for one message; the details say how it was decided. ``extra`` is the
    turn's scratch space: a model found down here is noted for the later nodes."""
    agents = all_agents()
    offline = understand(text, agents)
    if extra is not None:
        extra["absicht"] = offline.intent
    if get_gateway().name == "offline":
        return offline.route, {"route": offline.route, "by": "offline", **offline.details()}
    reading = by_model(text, agents)
    if reading.route is None:
        # DESIGN.md: an unreadable or failed model answer falls back to the offline verdict,
        # named as a fallback.
        logger.warning("router: fallback to offline (%s: %s)", reading.step, reading.reason)
        fault = reading.fault or ModelFault.OTHER
        if extra is not None:
            note_down(extra, fault)
        return offline.route, {
            "route": offline.route,
            "by": "rueckfall_offline",
            "fehler": reading.step,
            "grund": reading.reason,
            **offline.details(),
            **fallback_details(fault, step=reading.step),
        }
    details: dict[str, Any] = {"route": reading.route, "by": "modell", "aktion": reading.action}
    if reading.route != offline.route:
        # The cross-check: the model decides, the disagreement is named for the inspector.
        logger.info(
            "router: model and offline reading disagree",
            extra={"model": reading.route, "offline": offline.route},
        )
        details["abweichung"] = {"offline": offline.route, "absicht": offline.intent}
    return reading.route, details


def run(state: TurnState) -> TurnState:
    with node_log(state, "router") as log:
        if state.agent_result is not None:
            log.outcome = "antwort_auf_rueckfrage"
            log.details = {"route": state.route}
            return state
        state.route, details = route(state.text, state.extra)
        log.outcome = state.route
        log.details = details
    return state
