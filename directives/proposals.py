"""The rules page's way to a change: the chat's question, the chat's gate, the chat's audit.

The page knows the order already (which action, which rule, which words), so it skips the
classifier and enters the directives agent at ``propose``: the same validation (duplicates,
similar rules, create → reactivate), the same exact question stored as a ``PendingQuestion``
and the same ``gefragt`` step. The answer is a click, read by the same consent reader through
``conversation.gate.resume`` — "Ja" for the consent button, "Nein" for "Abbrechen" — so the
write happens in the agent's ``execute`` inside the gate's lock, verified and audited like a
"ja" typed in the chat. Nothing here writes a directive itself.

The question lives in the person's latest conversation: it is one open question of hers, and
the chat asks it again there if she answers it neither here nor there.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User

from conversation import gate
from conversation.agents import AgentContext, AgentResult, get_agent
from conversation.models import PendingQuestion
from conversation.services import session_ensure
from conversation.vocabulary import Status
from directives import selectors, services
from directives.agent.agent import DirectivesAgent
from directives.agent.classify import Classification
from directives.models import DirectiveStep

AGENT = "directives"
ACTIONS = ("create", "update", "delete", "reactivate", "undo")
# The actions that name the rule they change (``directive_id``).
TARGETED_ACTIONS = ("update", "delete", "reactivate")
# The largest primary key a row can have (a bigint column).
MAX_ROW_ID = 2**63 - 1
# The words a click stands for, read by the one consent reader like a typed answer.
CONSENT_ANSWER = "Ja"
REFUSAL_ANSWER = "Nein"
VIA = "regelseite"


@dataclass(frozen=True)
class Order:
    """What the page asks for: ``directive_id`` for update/delete/reactivate, ``text`` for
    create/update; undo needs neither (it reverts the person's last change)."""

    action: str
    directive_id: int | None = None
    text: str = ""
    context: str = ""


def _agent() -> DirectivesAgent:
    agent = get_agent(AGENT)
    if not isinstance(agent, DirectivesAgent):  # pragma: no cover - registered in apps.py
        raise RuntimeError("directives agent not registered")
    return agent


def _describe(order: Order) -> str:
    """The order in words, as the audit keeps a chat message (``text`` of the first step)."""
    parts = [f"Regelseite: {order.action}"]
    if order.directive_id is not None:
        parts.append(f"#{order.directive_id}")
    if order.text:
        parts.append(f"'{order.text}'")
    return " ".join(parts)[:300]


def proposal_open(*, user: User, order: Order) -> AgentResult:
    """Validate the order and ask its question (status ``rueckfrage``, ``data.pending_id``), or
    answer without a question (``abgeschlossen`` when nothing is to do, ``fehler`` with a named
    step such as ``nicht_gefunden``). Writes no directive."""
    if order.action not in ACTIONS:
        return AgentResult(Status.FAILED, "Diese Aktion kenne ich nicht.", step="aktion_unbekannt")
    session = session_ensure(user=user)
    ctx = AgentContext(
        user=user, character=session.character, session=session, text=_describe(order)
    )
    request_id = services.new_request_id()
    targeted = order.action in TARGETED_ACTIONS
    # Create and undo name no rule: an id sent along is not theirs to record (an unknown one
    # would break the audit row's foreign key at commit, one past bigint its insert).
    target_id = order.directive_id if targeted else None
    # Another person's id, a missing one and one no row can have look the same (seed 000
    # §4.4): all not found.
    target_unknown = targeted and (
        target_id is None
        or not 1 <= target_id <= MAX_ROW_ID
        or selectors.directive_get(user=user, directive_id=target_id) is None
    )
    classification = Classification(
        action=order.action,
        anweisung=order.text,
        kontext=order.context or None,
        target_id=None if target_unknown else target_id,
        target_unknown=target_unknown,
    )
    # The chat's first step is the classifier's; here the page names the order itself.
    services.step_record(
        user=user,
        request_id=request_id,
        step=DirectiveStep.Step.CLASSIFIED,
        action=order.action,
        directive_id=None if target_unknown else target_id,
        outcome=VIA,
        details={"via": VIA, "text": ctx.text},
    )
    return _agent().propose(ctx, classification, request_id=request_id)


def proposal_answer(*, user: User, pending_id: int, consent: bool) -> AgentResult | None:
    """The click on "Ja, so machen" (``consent``) or "Abbrechen", read by the gate; None when
    the question is not one of the person's directives questions (the caller answers 404)."""
    pending = selectors.pending_get(user=user, pending_id=pending_id)
    if pending is None:
        return None
    return gate.resume(_context(user, pending, consent), pending.pk)


def _context(user: User, pending: PendingQuestion, consent: bool) -> AgentContext:
    return AgentContext(
        user=user,
        character=pending.character,
        session=pending.session,
        text=CONSENT_ANSWER if consent else REFUSAL_ANSWER,
    )
