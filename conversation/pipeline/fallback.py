"""Degrade node by node (DESIGN.md "Language model calls"): when a node's model answer is
unreadable, empty, wrongly shaped or failed, that node's offline implementation answers instead.

This module names the model's failure (a ``ModelFault``) and the named fallback for the node's
log details: ``{"ersatz_offline": true, "modellfehler": "nicht_json", "modellschritt": …}``.

A fallback never executes anything: an agent that writes still asks the person first; the
offline implementations read the person's own words, never the model's answer.
"""

from __future__ import annotations

from typing import Any

from conversation.vocabulary import MODEL_FAULT_LABELS, ModelFault, NodeOutcome
from novaberg import llm

FALLBACK_KEY = NodeOutcome.OFFLINE_FALLBACK.value  # "ersatz_offline"
FAULT_KEY = "modellfehler"
STEP_KEY = "modellschritt"
# state.extra key: the model was unreachable or too slow earlier in this turn, so the later
# nodes go straight to their offline implementation instead of waiting for it again.
DOWN_KEY = "modell_ausgefallen"

_TIMEOUT_STEPS = llm.TIMEOUT_STEPS
# Stop or a disconnect: the person ended the turn; no text is sent in place of the model's.
_CANCEL_STEPS = frozenset({llm.STEP_CANCELLED, "abgebrochen_vom_aufrufer"})
_DOWN_FAULTS = frozenset({ModelFault.UNREACHABLE, ModelFault.TIMEOUT})


def fault_of(failure: llm.LLMFailure | None) -> ModelFault:
    """The model's failure as the gateway named it (``LLMFailure.step`` and its message)."""
    if failure is None:
        return ModelFault.EMPTY
    step = failure.step
    if step in _CANCEL_STEPS:
        return ModelFault.CANCELLED
    if step == llm.STEP_CONNECTION:
        return ModelFault.UNREACHABLE
    if step in _TIMEOUT_STEPS:
        return ModelFault.TIMEOUT
    if step == llm.STEP_HTTP:
        return ModelFault.HTTP_ERROR
    if step == llm.STEP_STREAM_BROKEN:
        return ModelFault.STREAM_BROKEN
    if step == llm.STEP_UNREADABLE:
        message = failure.message
        # The gateway's readers (novaberg/llm.py::_read_completion and the stream loop) say
        # which: no text at all, a body that is not JSON (the client hands it over as a bare
        # string), or JSON without the chat completion's shape.
        if "empty" in message or "without any text" in message:
            return ModelFault.EMPTY
        if message.startswith("no choices in str"):
            return ModelFault.NOT_JSON
        if "choices" in message:
            return ModelFault.WRONG_SHAPE
        return ModelFault.NOT_JSON
    return ModelFault.OTHER


def fault_of_reading(step: str) -> ModelFault:
    """The failure of a node's own checked reader (``kein_json``, ``kein_objekt``, ``ziel_fehlt``,
    ``feld_falscher_typ`` …): not JSON, empty, or JSON of the wrong shape."""
    if step == "kein_json":
        return ModelFault.NOT_JSON
    if step in ("leer", "leerer_inhalt"):
        return ModelFault.EMPTY
    return ModelFault.WRONG_SHAPE


def is_cancel(failure: llm.LLMFailure | None) -> bool:
    return failure is not None and failure.step in _CANCEL_STEPS


def details(fault: ModelFault, *, step: str = "", message: str = "") -> dict[str, Any]:
    """The named fallback as it goes into a node's log details (and an audit step's)."""
    out: dict[str, Any] = {FALLBACK_KEY: True, FAULT_KEY: fault.value}
    if step:
        out[STEP_KEY] = step
    if message:
        out["modellmeldung"] = message[:300]
    return out


def label(fault: str) -> str:
    """German words for a ``modellfehler`` (the inspector's "Ersatz: Offline-Modus — …")."""
    try:
        return MODEL_FAULT_LABELS[ModelFault(fault)]
    except ValueError:
        return MODEL_FAULT_LABELS[ModelFault.OTHER]


def note_down(extra: dict[str, Any], fault: ModelFault) -> None:
    """Remember for the rest of the turn that the model is down (unreachable or too slow)."""
    if fault in _DOWN_FAULTS:
        extra.setdefault(DOWN_KEY, fault.value)


def down_this_turn(extra: dict[str, Any]) -> str | None:
    """The fault an earlier node of this turn met, if the model is down for this turn."""
    found = extra.get(DOWN_KEY)
    return str(found) if found else None


# Said before the offline voice when the configured model gave no answer at all (issue 27): the
# person learns that the model failed, not merely that the reply is short. Neutral German (no
# du/Sie), true for every node that met the failure.
NO_ANSWER_TEXTS: dict[ModelFault, str] = {
    ModelFault.TIMEOUT: (
        "Das Sprachmodell hat nicht geantwortet; hier meine Antwort im Offline-Modus:"
    ),
    ModelFault.UNREACHABLE: (
        "Das Sprachmodell ist nicht erreichbar; hier meine Antwort im Offline-Modus:"
    ),
}


def no_answer_text(fault: str) -> str:
    """The sentence that names a model which did not answer (``fault``: a ``ModelFault`` value,
    the responder's own or the one an earlier node of the turn met); empty for any other
    failure (a model that answered with an error or babble is the node's named fallback)."""
    try:
        return NO_ANSWER_TEXTS.get(ModelFault(fault), "")
    except ValueError:
        return ""
