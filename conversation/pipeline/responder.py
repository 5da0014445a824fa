"""Node: the responder gives the composer's content Nova's voice and streams it to the client.

It sees [IDENTITAET], [EIGENE_EMOTION], [KOMMUNIKATION], [GESPRAECHSVERLAUF], the content,
[REGELN] and, last, the registered contract blocks ([DIREKTIVEN]; seed 000 §8.1: recency) —
never memory, records or research (seed 003 §2.2; the order is ``conversation.context``'s).
A confirmation question is sent exactly as stored (the person must see the wording that the
gate will execute), not re-voiced. When the model fails before a word of the reply is sent (an
error, an empty answer), the offline responder says the composer's content instead, named as a
fallback (``ersatz_offline``); a failure mid-reply stays a failed turn.
"""

from __future__ import annotations

import time

from conversation import context
from conversation.pipeline import fallback, offline, tribunal
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState
from conversation.pipeline.words import new_word_share
from conversation.prompts import blocks
from conversation.vocabulary import ModelFault, NodeOutcome, Status
from novaberg import llm

LLM_FAILED_TEXT = (
    "Entschuldige, ich kann gerade nicht antworten: Das Sprachmodell ist nicht erreichbar. "
    "Versuch es bitte gleich noch einmal."
)


def system_prompt(state: TurnState) -> str:
    contracts = context.contract_blocks()
    for contract in contracts:
        if contract.block not in state.blocks:
            # Every reply carries all active directives (seed 000 §1: one not loaded is not
            # obeyed), so the contract blocks are rendered for every reply.
            state.blocks[contract.block] = contract.render(user=state.user)
    parts = {
        "IDENTITAET": blocks.identity_block(state.character),
        "EIGENE_EMOTION": blocks.emotion_block(
            intent=state.vector.intent if state.vector else "social",
            strategy=state.vector.strategy if state.vector else "",
            text=state.text,
            history=state.history,
        ),
        "KOMMUNIKATION": blocks.communication_block(state.character),
        "GESPRAECHSVERLAUF": blocks.history_block(state.history, state.character.name),
        "REGELN": blocks.rules_block(),
    }
    state.blocks["REGELN"] = parts["REGELN"]
    if state.composer_text:
        parts["INHALT"] = blocks.content_block(state.composer_text)
    if state.blocks.get("KORREKTUR"):
        parts["KORREKTUR"] = state.blocks["KORREKTUR"]  # the last verdict (tribunal.prepare)
    for contract in contracts:
        if state.blocks.get(contract.block):
            parts[contract.block] = state.blocks[contract.block]
    return "\n\n".join(parts[name] for name in context.responder_order() if name in parts)


def contract_text(state: TurnState) -> str:
    """The contract blocks of this turn, for the offline responder's Sie/du form."""
    return "\n\n".join(
        state.blocks[c.block] for c in context.contract_blocks() if state.blocks.get(c.block)
    )


def messages_for(state: TurnState) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system_prompt(state)},
        {"role": "user", "content": state.text},
    ]


def _emit(state: TurnState, text: str) -> None:
    if state.on_token is not None and text:
        state.on_token(text)


def run(state: TurnState) -> TurnState:
    with node_log(state, "responder") as log:
        if state.failed:
            log.outcome = NodeOutcome.SKIPPED_FAILED
            return state
        if state.extra.get("schweigen"):
            log.outcome = "schweigen"  # the composer chose silence (seed 003 §2.1)
            return state
        if state.asks:
            assert state.agent_result is not None and state.agent_result.question
            state.reply = state.agent_result.question
            state.ttft_ms = state.extra["elapsed_ms"]()
            _emit(state, state.reply)
            log.outcome = "rueckfrage_wortgleich"
            return state
        if state.agent_result is not None and not state.composer_text:
            state.composer_text = state.agent_result.text

        tribunal.prepare(state)  # [KORREKTUR] into the prompt; the sentence guard on on_token
        messages = messages_for(state)
        state.prompts["responder"] = messages
        gateway = llm.get_gateway()
        hints = {
            "content": state.composer_text,
            "text": state.text,
            "directives": contract_text(state),
        }
        t0 = time.perf_counter()
        tokens: list[str] = []
        failure = None
        down = fallback.down_this_turn(state.extra) if gateway.name != "offline" else None
        if down is None:
            for event in gateway.stream(messages, purpose="responder", hints=hints):
                if event.kind == "token":
                    if not tokens:
                        state.ttft_ms = state.extra["elapsed_ms"]()
                    tokens.append(event.text)
                    _emit(state, event.text)
                elif event.kind == "error":
                    failure = event.failure
                    break
        state.reply = "".join(tokens)
        log.details = {
            "backend": gateway.name,
            "model": gateway.model,
            "stream_ms": int((time.perf_counter() - t0) * 1000),
            "tokens": len(tokens),
        }
        fault: ModelFault | None = None
        step = ""
        if down is not None:
            # The model was unreachable or too slow earlier in this turn: do not wait again.
            fault, step = ModelFault.DOWN_THIS_TURN, f"uebersprungen_{down}"
        elif not state.reply.strip() and not fallback.is_cancel(failure):
            # Failed (or empty) before any word reached the person: the offline voice says the
            # composer's content instead. After a Stop nothing is said in the model's place.
            fault = fallback.fault_of(failure) if failure is not None else ModelFault.EMPTY
            step = f"llm_{failure.step}" if failure is not None else "leere_antwort"
        if fault is not None and state.composer_text.strip():
            if failure is not None:
                log.details["error"] = failure.message
            log.fallback(fault, step=step)
            voice = offline.responder(messages, hints)
            # A model that gave no answer at all is named before the offline voice (issue 27).
            said = fallback.no_answer_text(down or fault)
            text = f"{said}\n\n{voice}" if said else voice
            for token in llm.split_tokens(text):
                if state.ttft_ms is None:
                    state.ttft_ms = state.extra["elapsed_ms"]()
                _emit(state, token)
            state.reply += text
            state.deviation, new_words = new_word_share(voice, state.composer_text)
            log.details["abweichung"] = state.deviation
            log.details["neue_woerter"] = new_words[:30]
            state.extra["new_words"] = new_words
            log.outcome = NodeOutcome.OFFLINE_FALLBACK
            return state
        if failure is not None and failure.step == llm.STEP_CANCELLED:
            # Stop, a disconnect or the turn's deadline: what was said stays as said, no failure
            # sentence; the runner ends the turn (runner.py::_halt).
            log.outcome = Status.CANCELLED.value
            state.status, state.step = Status.CANCELLED, llm.STEP_CANCELLED
            return state
        if failure is not None:
            # The person sees a clear sentence; the turn is marked failed (not half-stored).
            log.outcome = f"llm_{failure.step}"
            log.details["error"] = failure.message
            state.status = Status.FAILED
            state.step = f"llm_{failure.step}"
            separator = "\n\n" if state.reply else ""
            _emit(state, separator + LLM_FAILED_TEXT)
            state.reply = state.reply + separator + LLM_FAILED_TEXT
            if state.ttft_ms is None:
                state.ttft_ms = state.extra["elapsed_ms"]()
            return state
        if not state.reply.strip():
            log.outcome = "leere_antwort"
            state.status = Status.FAILED
            state.step = "leere_antwort"
            state.reply = LLM_FAILED_TEXT
            _emit(state, state.reply)
            return state
        # seed 003 §3.3: both texts exist separately, so the drift is measured every turn.
        state.deviation, new_words = new_word_share(state.reply, state.composer_text)
        log.details["abweichung"] = state.deviation
        log.details["neue_woerter"] = new_words[:30]
        state.extra["new_words"] = new_words
        log.outcome = "gestreamt"
    return state
