"""run_turn: the whole turn, node after node (DESIGN.md "One turn")."""

from __future__ import annotations

import logging
import time
import unicodedata
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from conversation import address, reaper
from conversation.models import Character, PendingQuestion, Session, Turn
from conversation.pipeline import (
    agent,
    composer,
    enricher,
    pending,
    reducer,
    remember,
    responder,
    router,
    stream_guard,
    tribunal,
    vector,
)
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import (
    STOP_DEADLINE,
    TurnCancel,
    TurnClock,
    TurnResult,
    TurnState,
)
from conversation.vocabulary import QuestionStatus, Status
from novaberg import embeddings, llm
from novaberg.logging import turn_context

logger = logging.getLogger("novaberg.turn")

HISTORY_TURNS = 12
CRASH_TEXT = "Entschuldige, da ist bei mir etwas schiefgegangen. Deine Nachricht ist gespeichert."
# Neutral German (no du/Sie): it is said whatever form of address the person's rules demand.
DEADLINE_TEXT = (
    "Die Antwort hat zu lange gedauert und wurde nach {seconds} abgebrochen. "
    "Die Nachricht ist gespeichert; bitte gleich noch einmal versuchen."
)

# Each node takes and returns the state (DESIGN.md "One turn"; seed 003 §2: the conversation
# vector is decided before the composer, which executes it).
NODES: list[Callable[[TurnState], TurnState]] = [
    pending.run,
    router.run,
    agent.run,
    # issue 16: the vector's model call needs only the history and the words, so it is sent
    # here and runs beside memory recall and retrieval; vector.run takes its answer (and writes
    # the node's row) before the composer. Without this entry the call is made in vector.run.
    vector.start,
    enricher.run,
    reducer.run,
    vector.run,
    composer.run,
    responder.run,
    tribunal.run,
    remember.run,
    pending.remind,  # the open question this message did not answer, asked again
]
# Entries that only send a node's work ahead: the node itself is the later entry.
AHEAD: frozenset[Callable[[TurnState], TurnState]] = frozenset({vector.start})


def check_input(text: str) -> tuple[str, str | None, str | None]:
    """Returns (cleaned text, failure step, German reason) for a message from the person."""
    cleaned = text.replace("\r\n", "\n").replace("\r", "\n")
    if any(unicodedata.category(ch) == "Cc" and ch not in "\n\t" for ch in cleaned):
        return (
            cleaned,
            "steuerzeichen",
            (
                "Deine Nachricht enthält Steuerzeichen, die ich nicht lesen kann. "
                "Schick sie bitte ohne diese Zeichen noch einmal."
            ),
        )
    if not cleaned.strip():
        return cleaned, "leer", "Deine Nachricht ist leer – schreib mir bitte etwas."
    if len(cleaned) > settings.MAX_MESSAGE_CHARS:
        return (
            cleaned,
            "zu_lang",
            (
                f"Deine Nachricht ist mit {len(cleaned)} Zeichen zu lang; ich nehme höchstens "
                f"{settings.MAX_MESSAGE_CHARS} Zeichen an. Teil sie bitte auf."
            ),
        )
    return cleaned.strip(), None, None


def history_rows(session: Session, before: Turn) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [
        dict(row)
        for row in Turn.objects.filter(session=session, created_at__lte=before.created_at)
        .exclude(pk=before.pk)
        .exclude(status=Status.FAILED)
        .order_by("-created_at", "-id")
        .values("id", "role", "text", "spontaneous")[:HISTORY_TURNS]
    ]
    return list(reversed(rows))


class _SessionLock:
    """Serialises turns of one session (two tabs sending at once stay ordered): a PostgreSQL
    advisory lock, held on this thread's connection for the whole turn."""

    def __init__(self, session_id: int) -> None:
        self.key = session_id

    def __enter__(self) -> None:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(%s, %s)", [7001, self.key])

    def __exit__(self, *exc: object) -> None:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s, %s)", [7001, self.key])


def run_turn(
    *,
    user: User,
    character: Character,
    session: Session,
    text: str,
    on_token: Callable[[str], None] | None = None,
    cancel: TurnCancel | None = None,
) -> TurnResult:
    """Run one turn for ``user`` in ``session`` (the caller checked that the session is his).

    ``cancel`` (set from another thread: Stop, a disconnect) ends the turn before its next
    node and ends its running model call; so does the turn's deadline (settings.TURN_TOTAL_S).
    Such a turn is stored with what had been said so far; no later node (tribunal, memory)
    runs on it."""
    t0 = time.perf_counter()
    cleaned, failed_step, reason = check_input(text)
    if failed_step is None:
        _warm_up()
    reason = address.for_person(reason, user=user) if reason else reason  # "Sieze mich"
    with _SessionLock(session.pk):
        # The clock starts once the turn has the session: waiting for another tab's turn
        # does not eat into this one's time.
        clock = TurnClock(
            cancel=cancel if cancel is not None else TurnCancel(),
            deadline=time.monotonic() + float(settings.TURN_TOTAL_S),
        )
        stored_text = cleaned
        if failed_step is not None:
            # PostgreSQL cannot store NUL; the refused message is kept readable and bounded.
            stored_text = "".join(
                ch for ch in cleaned if unicodedata.category(ch) != "Cc" or ch in "\n\t"
            )[: settings.MAX_MESSAGE_CHARS]
        # The owner lets the reaper close the turn if this process dies (conversation/reaper.py).
        turn = Turn.objects.create(
            session=session,
            role=Turn.Role.USER,
            text=stored_text,
            status=Status.RUNNING,
            owner=reaper.turn_owner(),
        )
        with turn_context(turn.pk):
            state = TurnState(
                user=user,
                character=character,
                session=session,
                text=cleaned,
                turn=turn,
                on_token=on_token,
                clock=clock,
            )
            state.extra["elapsed_ms"] = lambda: int((time.perf_counter() - t0) * 1000)
            if failed_step is not None:
                state.status, state.step, state.reply = Status.FAILED, failed_step, reason or ""
                if on_token is not None:
                    on_token(state.reply)
                logger.info("turn refused", extra={"step": failed_step})
            else:
                rows = history_rows(session, turn)
                state.history = [
                    {
                        "role": str(r["role"]),
                        "content": str(r["text"]),
                        # seed 003 §2.2: rendered as "Nova (von sich aus)"
                        **({"spontaneous": "ja"} if r["spontaneous"] else {}),
                    }
                    for r in rows
                ]
                state.extra["history_turn_ids"] = [r["id"] for r in rows]
                try:
                    # The lock is released at the end however the turn ends, so the next turn
                    # of this session runs normally after a Stop.
                    halted: str | None = None
                    with llm.cancel_scope(clock):
                        for node in NODES:
                            # Checked before each node only: a Stop after the last node
                            # finished changes nothing.
                            halted = clock.reason()
                            if halted is not None:
                                break
                            state = node(state)
                            if node not in AHEAD:
                                state.extra["_last_node"] = node.__module__.rsplit(".", 1)[-1]
                            if node is responder.run:
                                state.extra["_reply_complete"] = True
                    if halted is not None:
                        _halt(state, halted)
                except Exception:
                    logger.exception("turn crashed")
                    state.status, state.step = Status.FAILED, "absturz"
                    state.reply = address.for_person(CRASH_TEXT, user=user)
                    if on_token is not None:
                        on_token(state.reply)
            return _finish(state, t0)


def _warm_up() -> None:
    """Load the embedding model (once per process; daphne and the worker do it at start) before
    the turn's clock starts: loading takes seconds to a minute on a busy machine, cannot be
    interrupted, and is the process's start-up, not this turn's work. A failure is the
    enricher's to report (it embeds in every turn), so it is only logged here."""
    try:
        embeddings.warm_up()
    except Exception:
        logger.warning("embedding model not loaded before the turn", exc_info=True)


def _halt(state: TurnState, reason: str) -> None:
    """The turn was stopped (``reason`` names why, see state.py) before or during a node; the
    nodes after it did not run. Stop and disconnect keep what had been said (``abgebrochen``);
    the deadline adds a sentence that says so, unless the reply was already complete."""
    stream_guard.abandon(state)  # what the sentence guard still held was never said
    replied = bool(state.extra.get("_reply_complete")) and state.status != Status.CANCELLED
    with node_log(state, "abbruch") as log:
        log.outcome = reason
        log.details = {
            "nach_knoten": state.extra.get("_last_node", ""),
            "antwort_vollstaendig": replied,
            "gesagt_zeichen": len(state.reply),
        }
    logger.info("turn stopped", extra={"step": reason, "reply_complete": replied})
    if reason != STOP_DEADLINE:
        state.status, state.step = Status.CANCELLED, reason
        return
    if replied:
        # The whole reply was said; only the nodes after it ran out of time: the turn keeps
        # its status, the "abbruch" row says what was skipped.
        _remind_anyway(state)
        return
    message = DEADLINE_TEXT.format(seconds=_seconds(float(settings.TURN_TOTAL_S)))
    separator = "\n\n" if state.reply else ""
    if state.on_token is not None:
        state.on_token(separator + message)
    state.reply = state.reply + separator + message
    _remind_anyway(state)
    state.status, state.step = Status.FAILED, reason


def _remind_anyway(state: TurnState) -> None:
    """An open question this message did not answer is asked again even when the turn ran
    out of time: the reminder needs no model, and a slow model must not make the person lose
    the question (found against a small local model)."""
    try:
        if not state.extra.get("reminder_pending_id") and not state.asks:
            # The deadline may have cut the pending node itself, before it noted the question.
            still_open = (
                PendingQuestion.objects.filter(
                    user=state.user, session=state.session, status=QuestionStatus.OPEN
                )
                .order_by("-id")
                .first()
            )
            if still_open is not None:
                state.extra["reminder_pending_id"] = still_open.pk
        pending.remind(state)
    except Exception:
        logger.exception("reminder after the deadline failed", extra={"step": "erinnerung"})


def _seconds(value: float) -> str:
    """``1 Sekunde``, ``1,5 Sekunden``, ``60 Sekunden`` (German number and plural)."""
    number = f"{value:g}".replace(".", ",")
    return f"{number} Sekunde" if value == 1 else f"{number} Sekunden"


def _finish(state: TurnState, t0: float) -> TurnResult:
    result = state.agent_result
    if result is not None and state.status not in {Status.FAILED, Status.CANCELLED}:
        state.status = result.status
        state.step = result.step
        state.question = result.question
        state.records = state.records or result.records
    total_ms = int((time.perf_counter() - t0) * 1000)
    now = timezone.now()
    reply_turn = None
    if state.reply:
        reply_turn = Turn.objects.create(
            session=state.session,
            role=Turn.Role.ASSISTANT,
            text=state.reply,
            reply_to=state.turn,
            status=state.status,
            composer_text=state.composer_text,
            records=state.records,
            deviation=state.deviation,
            created_at=now,
            finished_at=now,
        )
    turn = state.turn
    turn.status = state.status
    turn.step = state.step
    turn.ttft_ms = state.ttft_ms
    turn.total_ms = total_ms
    turn.composer_text = state.composer_text
    turn.records = state.records
    turn.prompts = state.prompts
    turn.memories = state.memories
    turn.checks = state.checks
    turn.deviation = state.deviation
    turn.finished_at = now
    turn.save(
        update_fields=[
            "status",
            "step",
            "ttft_ms",
            "total_ms",
            "composer_text",
            "records",
            "prompts",
            "memories",
            "checks",
            "deviation",
            "finished_at",
        ]
    )
    Session.objects.filter(pk=state.session.pk).update(updated_at=now)
    logger.info(
        "turn finished",
        extra={
            "status": state.status,
            "step": state.step,
            "ms": total_ms,
            "ttft_ms": state.ttft_ms,
        },
    )
    return TurnResult(
        turn_id=turn.pk,
        reply_turn_id=reply_turn.pk if reply_turn else None,
        status=state.status,
        step=state.step,
        reply=state.reply,
        question=state.question,
        records=state.records,
        ttft_ms=state.ttft_ms,
        total_ms=total_ms,
        note=state.checks.get("hinweis"),
    )
