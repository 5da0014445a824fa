"""Node: the composer (Verfasser, seed 003) decides the content of the reply; not streamed.

It sees [AUFGABE], [GEDAECHTNIS], [AUFZEICHNUNGEN], [SACHLAGE], [GESPRAECHSVEKTOR] (with the
guiding thought and its protection, §2.4) and [GESPRAECHSVERLAUF]. The responder never sees
memory or records: what it could add, it would have to invent (§3.3).
"""

from __future__ import annotations

from typing import Any

from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState
from conversation.prompts import blocks
from conversation.prompts.composer import COMPOSER_BLOCKS, COMPOSER_INSTRUCTION
from files import blocks as files_blocks
from novaberg import llm

LLM_FAILED_TEXT = (
    "Entschuldige, ich kann gerade nicht antworten: Das Sprachmodell ist nicht erreichbar. "
    "Versuch es bitte gleich noch einmal."
)


def build_blocks(state: TurnState) -> dict[str, str]:
    """The composer's blocks by name (a block that has nothing to say is left out)."""
    vector = state.vector
    intent = vector.intent if vector else "social"
    out: dict[str, str] = {}
    result = state.agent_result
    if result is not None:
        out["AUFGABE"] = blocks.task_block(result.status, result.text)
    if state.memories:
        out["GEDAECHTNIS"] = blocks.memory_block(state.memories)
    if state.records:
        records_text = files_blocks.records_block(state.records)
        if not records_text:
            state.extra["records_fallback_block"] = True
            records_text = blocks.records_fallback_block(state.records)
        out["AUFZEICHNUNGEN"] = records_text
    out["SACHLAGE"] = blocks.situation_block(state.text, intent)
    if vector is not None:
        out["GESPRAECHSVEKTOR"] = blocks.vector_block(
            vector.strategy, vector.intent, vector.vehicle, vector.impulse
        )
    out["GESPRAECHSVERLAUF"] = blocks.history_block(state.history, state.character.name)
    return out


def messages_for(state: TurnState) -> list[dict[str, str]]:
    parts = build_blocks(state)
    state.blocks.update(parts)
    system = "\n\n".join(
        [COMPOSER_INSTRUCTION, *(parts[name] for name in COMPOSER_BLOCKS if name in parts)]
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Person B schreibt jetzt: {state.text}"},
    ]


def hints_for(state: TurnState) -> dict[str, Any]:
    result = state.agent_result
    return {
        "text": state.text,
        "task": result.text if result is not None else "",
        "memories": state.memories,
        "records": state.records,
        "intent": state.vector.intent if state.vector else "",
    }


def run(state: TurnState) -> TurnState:
    with node_log(state, "composer") as log:
        if state.asks:
            log.outcome = "uebersprungen_rueckfrage"
            return state
        messages = messages_for(state)
        state.prompts["composer"] = messages
        gateway = llm.get_gateway()
        result = gateway.chat(messages, purpose="composer", hints=hints_for(state))
        log.details = {
            "backend": gateway.name,
            "model": gateway.model,
            "blocks": [n for n in COMPOSER_BLOCKS if n in state.blocks],
            "memories": len(state.memories),
            "records": len(state.records),
            "llm_ms": result.ms,
        }
        if not result.ok or not result.text.strip():
            step = f"llm_{result.failure.step}" if result.failure else "leerer_inhalt"
            log.outcome = step
            state.status, state.step = "fehler", step
            state.reply = LLM_FAILED_TEXT
            if state.on_token is not None:
                state.on_token(state.reply)
            state.ttft_ms = state.extra["elapsed_ms"]()
            return state
        state.composer_text = result.text.strip()
        log.outcome = "verfasst"
        log.details["chars"] = len(state.composer_text)
    return state
