"""The vocabularies of the turn, each defined once (DESIGN.md "Agents and the confirmation gate").

A ``StrEnum`` member *is* its German word: it compares equal to it, is stored in the database as
it and serialises to JSON as it, so models, services, the API and tests all use these names and
no module spells the words itself. Models take their ``choices`` from here (``choices``).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import TypeVar


class Status(StrEnum):
    """The status of an agent's result and of the turn that carries it (a turn takes its
    agent's status). What went wrong or right in detail is the separate, named ``step``
    (``kein_objekt``, ``abgelehnt``, ``ausserhalb_aussenrand`` …)."""

    RUNNING = "laufend"
    QUESTION = "rueckfrage"
    DONE = "abgeschlossen"
    # The person said no at the gate (step ``abgelehnt``); nothing was executed (seed 000 §3).
    DISMISSED = "dismissed"
    # The request was turned down before anything was asked: not an order (seed 000 §4), a path
    # outside the boundary (step names which).
    REJECTED = "rejected"
    FAILED = "fehler"
    # The turn ended before its last node: the person pressed Stop or the client went away
    # (step ``stopp`` / ``verbindung_getrennt``); what had been said so far is kept.
    CANCELLED = "abgebrochen"
    # The process that ran the turn died before it ended (a crash, a restart): the reaper
    # (conversation/reaper.py) closed it without a reply; step ``prozess_beendet`` or
    # ``frist_ueberschritten`` says how it knew.
    INTERRUPTED = "unterbrochen"


STATUS_LABELS: Mapping[Status, str] = {
    Status.RUNNING: "laufend",
    Status.QUESTION: "Rückfrage",
    Status.DONE: "abgeschlossen",
    Status.DISMISSED: "verworfen",
    Status.REJECTED: "abgewiesen",
    Status.FAILED: "Fehler",
    Status.CANCELLED: "abgebrochen",
    Status.INTERRUPTED: "unterbrochen",
}


class QuestionStatus(StrEnum):
    """A ``PendingQuestion`` moves from ``offen`` to exactly one of the others, once."""

    OPEN = "offen"
    EXECUTED = "ausgefuehrt"
    DISMISSED = "dismissed"
    EXPIRED = "abgelaufen"
    REPLACED = "ersetzt"
    FAILED = "fehler"


QUESTION_STATUS_LABELS: Mapping[QuestionStatus, str] = {
    QuestionStatus.OPEN: "offen",
    QuestionStatus.EXECUTED: "ausgeführt",
    QuestionStatus.DISMISSED: "verworfen",
    QuestionStatus.EXPIRED: "abgelaufen",
    QuestionStatus.REPLACED: "ersetzt",
    QuestionStatus.FAILED: "Fehler",
}


class QuestionKind(StrEnum):
    """A yes/no question may execute on consent; a choice question never executes."""

    YES_NO = "yes_no"
    CHOICE = "choice"


QUESTION_KIND_LABELS: Mapping[QuestionKind, str] = {
    QuestionKind.YES_NO: "Ja/Nein",
    QuestionKind.CHOICE: "Auswahl",
}


class ConsentOutcome(StrEnum):
    """What the one consent reader made of an answer; only ``consent`` may execute."""

    CONSENT = "consent"
    REFUSAL = "refusal"
    UNCLEAR = "unclear"


class NodeOutcome(StrEnum):
    """Outcomes of pipeline nodes that several nodes share; a node's own outcomes (``verfasst``,
    ``gestreamt`` …) are named where it sets them."""

    SKIPPED_QUESTION = "uebersprungen_rueckfrage"
    SKIPPED_FAILED = "uebersprungen_fehler"
    FAILED = "fehler"
    NO_RESULT = "ohne_ergebnis"
    # The model's answer was unreadable, empty, wrongly shaped or failed: the node's offline
    # implementation answered instead (DESIGN.md "Language model calls"); details name the
    # model's failure (``modellfehler``, a ``ModelFault``).
    OFFLINE_FALLBACK = "ersatz_offline"


class ModelFault(StrEnum):
    """Why a node did not use the model's answer (``details["modellfehler"]`` of a fallback)."""

    NOT_JSON = "nicht_json"
    EMPTY = "leer"
    WRONG_SHAPE = "falsche_form"
    TIMEOUT = "zeitueberschreitung"
    UNREACHABLE = "nicht_erreichbar"
    HTTP_ERROR = "http_fehler"
    STREAM_BROKEN = "abbruch_im_stream"
    DOWN_THIS_TURN = "im_turn_ausgefallen"  # an earlier node of the turn found the model down
    CANCELLED = "abgebrochen"  # Stop, a disconnect or the turn's deadline ended the call
    OTHER = "sonstiger_fehler"


MODEL_FAULT_LABELS: Mapping[ModelFault, str] = {
    ModelFault.NOT_JSON: "Modell antwortete nicht lesbar",
    ModelFault.EMPTY: "Modell antwortete leer",
    ModelFault.WRONG_SHAPE: "Modell antwortete in falscher Form",
    ModelFault.TIMEOUT: "Modell antwortete nicht rechtzeitig",
    ModelFault.UNREACHABLE: "Modell nicht erreichbar",
    ModelFault.HTTP_ERROR: "Modell meldete einen Fehler",
    ModelFault.STREAM_BROKEN: "Antwort des Modells brach ab",
    ModelFault.DOWN_THIS_TURN: "Modell fiel schon früher in diesem Turn aus",
    ModelFault.CANCELLED: "Turn abgebrochen, bevor das Modell antwortete",
    ModelFault.OTHER: "Modell antwortete nicht brauchbar",
}


class CheckOutcome(StrEnum):
    """Verdicts of a reply check that the tribunal node reads; a check may name further
    outcomes of its own (``keine_direktiven``, ``ethik_vorrang``), which pass as they are."""

    OK = "ok"
    VIOLATION = "verstoss"
    FAILED = "fehler"


E = TypeVar("E", bound=StrEnum)


def choices(vocabulary: type[E], labels: Mapping[E, str] | None = None) -> list[tuple[str, str]]:
    """Django ``choices`` for a model field, in the vocabulary's order."""
    return [(member.value, (labels or {}).get(member, member.value)) for member in vocabulary]
