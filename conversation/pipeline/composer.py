"""Node: the composer (Verfasser, seed 003) decides the content of the reply; not streamed.

It sees [AUFGABE], [GEDAECHTNIS], the blocks of the registered composer sources (records as
[AUFZEICHNUNGEN], …), [SACHLAGE], [GESPRAECHSVEKTOR] (with the guiding thought and its
protection, §2.4) and [GESPRAECHSVERLAUF], in the order ``conversation.context`` lays down. The
responder never sees memory or records: what it could add, it would have to invent (§3.3).
"""

from __future__ import annotations

import logging
from typing import Any

from conversation import context
from conversation.pipeline import fallback, offline, sachlage
from conversation.pipeline.logging import NodeRecord, node_log
from conversation.pipeline.state import TurnState
from conversation.prompts import blocks
from conversation.prompts.composer import COMPOSER_INSTRUCTION
from conversation.vocabulary import ModelFault, NodeOutcome, Status
from novaberg import llm

logger = logging.getLogger(__name__)

SILENCE_TEXT = "…"  # seed 003 §2.1 Schweigen: Nova says nothing of substance
LLM_FAILED_TEXT = (
    "Entschuldige, ich kann gerade nicht antworten: Das Sprachmodell ist nicht erreichbar. "
    "Versuch es bitte gleich noch einmal."
)


def situation_block(state: TurnState) -> str:
    """[SACHLAGE] with its named outcome in ``state.situation`` (seed 003 §2.2: block written ·
    ran and empty · did not run)."""
    try:
        found = sachlage.situation(state)
    except Exception as exc:
        # The composer still writes without it; the row says the block did not run.
        logger.exception("sachlage failed")
        state.situation = {"outcome": "fehler", "error": f"{type(exc).__name__}: {exc}"[:300]}
        return ""
    text = sachlage.situation_block(found)
    state.situation = {"outcome": "geschrieben" if text else "leer", **found.details()}
    return text


def build_blocks(state: TurnState) -> dict[str, str]:
    """The composer's blocks by name (a block that has nothing to say is left out)."""
    vector = state.vector
    name = state.character.name
    out: dict[str, str] = {}
    result = state.agent_result
    if result is not None:
        out["AUFGABE"] = blocks.task_block(result.status, result.text)
    if state.memories:
        out["GEDAECHTNIS"] = blocks.memory_block(state.memories, name)
    for source in context.composer_sources():
        items = state.found.get(source.name)
        if items and (text := context.render_source(source, items)):
            out[source.block] = text
    if situation := situation_block(state):
        out["SACHLAGE"] = situation
    if vector is not None:
        out["GESPRAECHSVEKTOR"] = blocks.vector_block(
            vector.strategy,
            vector.intent,
            vector.vehicle,
            vector.impulse,
            first=vector.first,
            character_name=name,
        )
    out["GESPRAECHSVERLAUF"] = blocks.history_block(state.history, name)
    return out


def messages_for(state: TurnState) -> list[dict[str, str]]:
    parts = build_blocks(state)
    state.blocks.update(parts)
    order = context.composer_order()
    system = "\n\n".join([COMPOSER_INSTRUCTION, *(parts[name] for name in order if name in parts)])
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Der {blocks.USER_NAME} schreibt jetzt: {state.text}"},
    ]


def hints_for(state: TurnState) -> dict[str, Any]:
    result = state.agent_result
    contributed = [
        source.offline_text(items)
        for source in context.composer_sources()
        if source.offline_text is not None and (items := state.found.get(source.name))
    ]
    return {
        "text": state.text,
        "task": result.text if result is not None else "",
        "memories": state.memories,
        "records": state.records,
        "contributed": [text for text in contributed if text],
        "intent": state.vector.intent if state.vector else "",
    }


def run(state: TurnState) -> TurnState:
    with node_log(state, "composer") as log:
        if state.asks:
            log.outcome = NodeOutcome.SKIPPED_QUESTION
            return state
        messages = messages_for(state)
        state.prompts["composer"] = messages
        gateway = llm.get_gateway()
        hints = hints_for(state)
        log.details = {
            "backend": gateway.name,
            "model": gateway.model,
            "blocks": [n for n in context.composer_order() if n in state.blocks],
            "memories": len(state.memories),
            "records": len(state.records),
            "sachlage": state.situation,
        }
        down = fallback.down_this_turn(state.extra) if gateway.name != "offline" else None
        if down is not None:
            # The model was unreachable or too slow earlier in this turn: do not wait again.
            return _offline_content(
                state, log, messages, hints, ModelFault.DOWN_THIS_TURN, f"uebersprungen_{down}"
            )
        result = gateway.chat(messages, purpose="composer", hints=hints)
        log.details["llm_ms"] = result.ms
        empty = (result.ok and not result.text.strip()) or (
            result.failure is not None and result.failure.message == "empty message content"
        )
        if empty and state.vector is not None and state.vector.vehicle == "schweigen":
            # seed 003 §2.1: the vehicle Schweigen — empty content on purpose is a short
            # non-answer, not a failure of the model.
            state.extra["schweigen"] = True
            state.reply = SILENCE_TEXT
            if state.on_token is not None:
                state.on_token(state.reply)
            state.ttft_ms = state.extra["elapsed_ms"]()
            log.outcome = "schweigen"
            return state
        if not result.ok or not result.text.strip():
            # DESIGN.md: a failed or empty answer falls back to the offline composer, which
            # answers extractively from the same blocks (records with their citation); the
            # responder then voices that content (composer before responder, as always).
            step = f"llm_{result.failure.step}" if result.failure else "leerer_inhalt"
            fault = fallback.fault_of(result.failure) if not result.ok else ModelFault.EMPTY
            fallback.note_down(state.extra, fault)
            return _offline_content(state, log, messages, hints, fault, step)
        state.composer_text = result.text.strip()
        log.outcome = "verfasst"
        log.details["chars"] = len(state.composer_text)
    return state


def _offline_content(
    state: TurnState,
    log: NodeRecord,
    messages: list[dict[str, str]],
    hints: dict[str, Any],
    fault: ModelFault,
    step: str,
) -> TurnState:
    content = offline.composer(messages, hints).strip()
    log.fallback(fault, step=step)
    if not content:
        # Not reachable with the offline composer (it always says something); named anyway.
        log.outcome = step
        state.status, state.step = Status.FAILED, step
        state.reply = LLM_FAILED_TEXT
        if state.on_token is not None:
            state.on_token(state.reply)
        state.ttft_ms = state.extra["elapsed_ms"]()
        return state
    state.composer_text = content
    log.outcome = NodeOutcome.OFFLINE_FALLBACK
    log.details["chars"] = len(content)
    return state
