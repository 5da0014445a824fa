"""Writes of directives: bi-temporal, audited, verified (seed 000 §5.2, §7).

Every write runs in its own savepoint and is read back before it counts. A write that cannot be
verified is rolled back and reported as a failure with a named step — never as success
(seed 000 §7, ``DIENST-MELDET-ABGESCHLOSSEN-OHNE-VERIFIKATION``). Each UPDATE carries the
person in its condition and must hit exactly one row, else step ``keine_zeile`` (seed 000 §4.4).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from directives.models import Directive, DirectiveStep

NOT_READ: dict[str, Any] = {"gelesen": False}
MAX_TEXT_CHARS = 500
ALREADY_THERE = "Diese Regel gibt es schon"  # the answer adds ": '<text>'."
_WORD_RE = re.compile(r"[\wäöüß]+", re.IGNORECASE)
# The first key of the person's advisory lock: "DIR\0", so that no other lock of the project
# that keys on a user id waits on this one.
_LOCK_NAMESPACE = 0x44495200


@dataclass
class WriteOutcome:
    ok: bool
    step: str  # "verifiziert" | "schon_ausgefuehrt" | a failure step
    reason: str = ""
    directive: Directive | None = None
    previous: dict[str, Any] = field(default_factory=dict)
    touched: list[int] = field(default_factory=list)


class _WriteFailed(Exception):
    def __init__(self, step: str, reason: str, previous: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.step = step
        self.reason = reason
        self.previous = previous or NOT_READ


def words_of(text: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(text or "")]


def normalised_text(text: str) -> str:
    """The key under which a rule exists once: its words, lower case, without punctuation."""
    return " ".join(words_of(text))


def _lock_person(user: User) -> None:
    """Serialise every directive write of one person until the transaction ends.

    The duplicate check of the validation runs before the question is asked; two sessions (or
    ten API requests) can pass it at the same time. Under this lock the check runs again on
    committed rows (READ COMMITTED: each statement sees what the previous holder committed), so
    the second writer finds the first one's rule. An advisory lock, not ``FOR UPDATE`` on the
    user row: that would also block every insert that references the person (turns, logs).
    """
    if connection.vendor != "postgresql":  # pragma: no cover - the project runs on PostgreSQL
        User.objects.select_for_update().filter(pk=user.pk).first()
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, user.pk % 2**31])


def _refuse_duplicate(*, user: User, text: str, except_id: int | None = None) -> None:
    """Raise ``schon_vorhanden`` if an active rule of the person has the same normalised text.

    Precondition: the person's lock is held (``_run_write``)."""
    key = normalised_text(text)
    rows = Directive.objects.filter(user=user, active=True)
    if except_id is not None:
        rows = rows.exclude(pk=except_id)
    for existing in rows.values_list("text", flat=True):
        if normalised_text(existing) == key:
            raise _WriteFailed("schon_vorhanden", f"{ALREADY_THERE}: '{existing}'.")


def new_request_id() -> str:
    return str(uuid.uuid4())


def step_record(
    *,
    user: User,
    request_id: str,
    step: str,
    action: str = "",
    source: str = "chat",
    directive: Directive | None = None,
    directive_id: int | None = None,
    outcome: str = "",
    pending_id: int | None = None,
    previous: dict[str, Any] | None = None,
    details: dict[str, Any] | None = None,
) -> DirectiveStep:
    return DirectiveStep.objects.create(
        user=user,
        directive_id=directive.pk if directive is not None else directive_id,
        request_id=request_id,
        step=step,
        action=action,
        source=source,
        outcome=outcome[:64],
        pending_id=pending_id,
        previous=previous if previous is not None else dict(NOT_READ),
        details=details or {},
    )


def clean_text(text: str) -> str:
    """The stored form of a directive text; raises _WriteFailed on empty or oversized text."""
    cleaned = " ".join((text or "").split())
    if not cleaned:
        raise _WriteFailed("anweisung_leer", "Die Direktive hat keinen Text.")
    if len(cleaned) > MAX_TEXT_CHARS:
        raise _WriteFailed(
            "anweisung_zu_lang",
            f"Eine Direktive darf höchstens {MAX_TEXT_CHARS} Zeichen lang sein.",
        )
    return cleaned


def _run_write(
    *,
    user: User,
    action: str,
    source: str,
    request_id: str | None,
    pending_id: int | None,
    write: Callable[[str], WriteOutcome],
) -> WriteOutcome:
    request_id = request_id or new_request_id()
    # seed 000 §6.2 again, inside the write: one rule exists once (see _lock_person).
    _lock_person(user)
    if pending_id is not None:
        # Idempotent, keyed by the pending question: a repeated or resumed answer never writes
        # twice, even if the gate's own guard were bypassed.
        done = DirectiveStep.objects.filter(
            user=user, pending_id=pending_id, step=DirectiveStep.Step.VERIFIED
        ).first()
        if done is not None:
            return WriteOutcome(
                True,
                "schon_ausgefuehrt",
                directive=(
                    Directive.objects.filter(user=user, pk=done.directive_id).first()
                    if done.directive_id is not None
                    else None
                ),
            )
    try:
        with transaction.atomic():
            outcome = write(request_id)
    except _WriteFailed as exc:
        # The savepoint is rolled back: nothing half-written. The failure itself is kept.
        step_record(
            user=user,
            request_id=request_id,
            step=DirectiveStep.Step.FAILED,
            action=action,
            source=source,
            outcome=exc.step,
            pending_id=pending_id,
            previous=exc.previous,
            details={"reason": exc.reason},
        )
        return WriteOutcome(False, exc.step, exc.reason, previous=exc.previous)
    return outcome


def _record_pair(
    *,
    user: User,
    request_id: str,
    action: str,
    source: str,
    pending_id: int | None,
    directive: Directive,
    previous: dict[str, Any],
    details: dict[str, Any],
) -> None:
    step_record(
        user=user,
        request_id=request_id,
        step=DirectiveStep.Step.EXECUTED,
        action=action,
        source=source,
        directive=directive,
        outcome="ausgefuehrt",
        pending_id=pending_id,
        previous=previous,
        details=details,
    )


def _verified(
    *,
    user: User,
    request_id: str,
    action: str,
    source: str,
    pending_id: int | None,
    directive_id: int,
    expect: dict[str, Any],
    previous: dict[str, Any],
    details: dict[str, Any] | None = None,
) -> Directive:
    """Read the row back and compare it with ``expect`` (seed 000 §7)."""
    row = Directive.objects.filter(user=user, pk=directive_id).first()
    if row is None:
        raise _WriteFailed("verifikation", "Die Direktive ist nach dem Schreiben nicht lesbar.")
    for key, value in expect.items():
        if getattr(row, key) != value:
            raise _WriteFailed(
                "verifikation",
                f"Nach dem Schreiben stimmt '{key}' nicht (erwartet {value!r}).",
                previous,
            )
    step_record(
        user=user,
        request_id=request_id,
        step=DirectiveStep.Step.VERIFIED,
        action=action,
        source=source,
        directive=row,
        outcome="verifiziert",
        pending_id=pending_id,
        previous=previous,
        details={"expect": {k: v for k, v in expect.items()}, **(details or {})},
    )
    return row


def _set_active(*, user: User, directive_id: int, active: bool) -> dict[str, Any]:
    """The one UPDATE path: flips ``active`` of exactly one row of the person."""
    row = (
        Directive.objects.select_for_update()
        .filter(user=user, pk=directive_id, active=not active)
        .first()
    )
    if row is None:
        raise _WriteFailed(
            "keine_zeile", "Diese Direktive gibt es nicht (mehr) in dem erwarteten Zustand."
        )
    previous = row.snapshot()
    if active:
        _refuse_duplicate(user=user, text=row.text, except_id=row.pk)
    hit = Directive.objects.filter(user=user, pk=directive_id, active=not active).update(
        active=active, changed_at=timezone.now()
    )
    if hit != 1:
        raise _WriteFailed("keine_zeile", "Der Schreibvorgang hat keine Zeile getroffen.", previous)
    return previous


@transaction.atomic
def directive_create(
    *,
    user: User,
    text: str,
    context: str = "",
    source: str = "chat",
    request_id: str | None = None,
    pending_id: int | None = None,
) -> WriteOutcome:
    def write(rid: str) -> WriteOutcome:
        cleaned = clean_text(text)
        _refuse_duplicate(user=user, text=cleaned)
        row = Directive.objects.create(user=user, text=cleaned, context=(context or "").strip())
        _record_pair(
            user=user,
            request_id=rid,
            action="create",
            source=source,
            pending_id=pending_id,
            directive=row,
            previous=dict(NOT_READ),
            details={"text": cleaned},
        )
        verified = _verified(
            user=user,
            request_id=rid,
            action="create",
            source=source,
            pending_id=pending_id,
            directive_id=row.pk,
            expect={"text": cleaned, "active": True, "context": row.context},
            previous=dict(NOT_READ),
        )
        return WriteOutcome(True, "verifiziert", directive=verified, touched=[row.pk])

    return _run_write(
        user=user,
        action="create",
        source=source,
        request_id=request_id,
        pending_id=pending_id,
        write=write,
    )


@transaction.atomic
def directive_update(
    *,
    user: User,
    directive_id: int,
    text: str,
    context: str | None = None,
    source: str = "chat",
    request_id: str | None = None,
    pending_id: int | None = None,
) -> WriteOutcome:
    """Bi-temporal update (seed 000 §5.2): deactivate the old row, insert the new one."""

    def write(rid: str) -> WriteOutcome:
        cleaned = clean_text(text)
        _refuse_duplicate(user=user, text=cleaned, except_id=directive_id)
        previous = _set_active(user=user, directive_id=directive_id, active=False)
        new_context = previous["context"] if context is None else context.strip()
        row = Directive.objects.create(
            user=user, text=cleaned, context=new_context, replaces_id=directive_id
        )
        _record_pair(
            user=user,
            request_id=rid,
            action="update",
            source=source,
            pending_id=pending_id,
            directive=row,
            previous=previous,
            details={"text": cleaned, "replaces": directive_id},
        )
        old = Directive.objects.filter(user=user, pk=directive_id).values_list("active", flat=True)
        if list(old) != [False]:
            raise _WriteFailed("verifikation", "Die alte Direktive ist noch aktiv.", previous)
        verified = _verified(
            user=user,
            request_id=rid,
            action="update",
            source=source,
            pending_id=pending_id,
            directive_id=row.pk,
            expect={"text": cleaned, "active": True, "replaces_id": directive_id},
            previous=previous,
        )
        return WriteOutcome(
            True, "verifiziert", directive=verified, previous=previous, touched=[row.pk]
        )

    return _run_write(
        user=user,
        action="update",
        source=source,
        request_id=request_id,
        pending_id=pending_id,
        write=write,
    )


def _flip(
    *,
    user: User,
    directive_id: int,
    active: bool,
    action: str,
    source: str,
    request_id: str | None,
    pending_id: int | None,
) -> WriteOutcome:
    def write(rid: str) -> WriteOutcome:
        previous = _set_active(user=user, directive_id=directive_id, active=active)
        _record_pair(
            user=user,
            request_id=rid,
            action=action,
            source=source,
            pending_id=pending_id,
            directive=Directive(pk=directive_id),
            previous=previous,
            details={"active": active},
        )
        verified = _verified(
            user=user,
            request_id=rid,
            action=action,
            source=source,
            pending_id=pending_id,
            directive_id=directive_id,
            expect={"active": active},
            previous=previous,
        )
        return WriteOutcome(
            True, "verifiziert", directive=verified, previous=previous, touched=[directive_id]
        )

    return _run_write(
        user=user,
        action=action,
        source=source,
        request_id=request_id,
        pending_id=pending_id,
        write=write,
    )


@transaction.atomic
def directive_deactivate(
    *,
    user: User,
    directive_id: int,
    source: str = "chat",
    request_id: str | None = None,
    pending_id: int | None = None,
) -> WriteOutcome:
    return _flip(
        user=user,
        directive_id=directive_id,
        active=False,
        action="delete",
        source=source,
        request_id=request_id,
        pending_id=pending_id,
    )


class _Rollback(Exception):
    def __init__(self, outcome: WriteOutcome) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


def directive_deactivate_many(
    *,
    user: User,
    directive_ids: list[int],
    source: str = "chat",
    request_id: str | None = None,
    pending_id: int | None = None,
) -> WriteOutcome:
    """ "Lösch alle meine Regeln": every rule through the one delete path (its audit steps and
    its read-back), all of them or none. The steps carry the question's ``pending_id`` once all
    are written, so a repeated answer finds them and writes nothing twice."""
    done = DirectiveStep.objects.filter(
        user=user, pending_id=pending_id, step=DirectiveStep.Step.VERIFIED
    )
    if pending_id is not None and done.exists():
        return WriteOutcome(True, "schon_ausgefuehrt", touched=directive_ids)
    if not directive_ids:
        return WriteOutcome(False, "keine_zeile", "Es gab keine Direktive zu entfernen.")
    request_id = str(request_id or new_request_id())
    try:
        with transaction.atomic():
            last = None
            for directive_id in directive_ids:
                outcome = directive_deactivate(
                    user=user, directive_id=directive_id, source=source, request_id=request_id
                )
                if not outcome.ok:
                    raise _Rollback(outcome)
                last = outcome.directive
            DirectiveStep.objects.filter(
                user=user,
                request_id=request_id,
                pending_id__isnull=True,
                step__in=[DirectiveStep.Step.EXECUTED, DirectiveStep.Step.VERIFIED],
            ).update(pending_id=pending_id)
    except _Rollback as exc:
        step_record(
            user=user,
            request_id=request_id,
            step=DirectiveStep.Step.FAILED,
            action="delete",
            outcome=exc.outcome.step,
            pending_id=pending_id,
            details={"reason": exc.outcome.reason, "directive_ids": directive_ids},
        )
        return WriteOutcome(False, exc.outcome.step, exc.outcome.reason)
    return WriteOutcome(True, "verifiziert", directive=last, touched=directive_ids)


@transaction.atomic
def directive_reactivate(
    *,
    user: User,
    directive_id: int,
    source: str = "chat",
    request_id: str | None = None,
    pending_id: int | None = None,
) -> WriteOutcome:
    return _flip(
        user=user,
        directive_id=directive_id,
        active=True,
        action="reactivate",
        source=source,
        request_id=request_id,
        pending_id=pending_id,
    )


@transaction.atomic
def directive_undo(
    *,
    user: User,
    deactivate: list[int],
    activate: list[int],
    source: str = "chat",
    request_id: str | None = None,
    pending_id: int | None = None,
) -> WriteOutcome:
    """Restore the state before the last change from the history: all flips or none."""

    def write(rid: str) -> WriteOutcome:
        touched: list[int] = []
        last: Directive | None = None
        for directive_id, active in [(d, False) for d in deactivate] + [
            (a, True) for a in activate
        ]:
            previous = _set_active(user=user, directive_id=directive_id, active=active)
            _record_pair(
                user=user,
                request_id=rid,
                action="undo",
                source=source,
                pending_id=pending_id,
                directive=Directive(pk=directive_id),
                previous=previous,
                details={"active": active},
            )
            last = _verified(
                user=user,
                request_id=rid,
                action="undo",
                source=source,
                pending_id=pending_id,
                directive_id=directive_id,
                expect={"active": active},
                previous=previous,
            )
            touched.append(directive_id)
        if not touched:
            raise _WriteFailed("keine_zeile", "Es gab nichts rückgängig zu machen.")
        return WriteOutcome(True, "verifiziert", directive=last, touched=touched)

    return _run_write(
        user=user,
        action="undo",
        source=source,
        request_id=request_id,
        pending_id=pending_id,
        write=write,
    )
