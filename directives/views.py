"""The rules page ("Deine Regeln"): the person's rules with their history, and every change
through the chat's own confirmation (static/rules.js asks the proposals API, shows the stored
question word for word and answers it only on the consent click)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from conversation.address import AddressForm, address_form
from directives import selectors, services
from directives.models import Directive, DirectiveStep
from novaberg.auth import request_user

_DONE = {
    "create": "Angelegt",
    "update": "Neue Fassung angelegt",
    "delete": "Entfernt",
    "reactivate": "Wieder aktiviert",
}


def _quoted(text: object) -> str:
    return f"„{text}“"


def _answered(outcome: str) -> str:
    if outcome == "zustimmung":
        return "Zugestimmt"
    if outcome.startswith("refusal"):
        return "Abgelehnt – nichts geändert"
    if outcome.startswith("auswahl"):
        return "Auswahl getroffen"
    if outcome == "korrektur":
        return "Wortlaut korrigiert, Nova hat neu gefragt"
    return "Antwort war nicht eindeutig – Nova hat noch einmal gefragt"


def step_text(step: DirectiveStep) -> str:
    """One audit step in plain German (the technical name stays in the admin and the API)."""
    details: dict[str, Any] = step.details if isinstance(step.details, dict) else {}
    kind = step.step
    if kind == DirectiveStep.Step.CLASSIFIED:
        if details.get("via") == "regelseite":
            return "Auf der Regelseite beauftragt"
        return "Im Chat als Auftrag erkannt"
    if kind == DirectiveStep.Step.VALIDATED:
        return "Geprüft"
    if kind == DirectiveStep.Step.ASKED:
        return f"Nova hat gefragt: {_quoted(details.get('question', ''))}"
    if kind == DirectiveStep.Step.ANSWERED:
        return _answered(step.outcome)
    if kind == DirectiveStep.Step.EXECUTED:
        if step.action == "undo":
            state = "wieder aktiv" if details.get("active") else "entfernt"
            text = f"Rückgängig gemacht ({state})"
        elif step.action in ("create", "update") and details.get("text"):
            text = f"{_DONE[step.action]}: {_quoted(details['text'])}"
        else:
            text = _DONE.get(step.action, "Ausgeführt")
        return f"{text} (über die API)" if step.source == "api" else text
    if kind == DirectiveStep.Step.VERIFIED:
        return "Nachgelesen: so gespeichert wie beabsichtigt"
    reason = details.get("reason") or step.outcome
    return f"Fehlgeschlagen: {reason}"


def _version(row: Directive, number: int, following: Directive | None) -> dict[str, Any]:
    until: datetime | None = None
    if following is not None:
        until = following.created_at
    elif not row.active:
        until = row.changed_at
    return {
        "number": number,
        "text": row.text,
        "context": row.context,
        "since": row.created_at,
        "until": until,
        "active": row.active,
    }


def _card(card: selectors.RuleCard) -> dict[str, Any]:
    chain = card.chain
    versions = [
        _version(row, n, chain[n] if n < len(chain) else None)
        for n, row in enumerate(chain, start=1)
    ]
    return {
        "row": card.row,
        "first_since": chain[0].created_at,
        "versions": versions,
        "steps": [{"at": s.created_at, "text": step_text(s)} for s in card.steps],
    }


@login_required
@require_GET
def rules_page(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    active, inactive = selectors.rule_cards(user=user)
    return render(
        request,
        "directives/regeln.html",
        {
            "active_cards": [_card(c) for c in active],
            "inactive_cards": [_card(c) for c in inactive],
            "pending": selectors.pending_open(user=user),
            "siezen": address_form(user) is AddressForm.SIE,
            "max_chars": services.MAX_TEXT_CHARS,
        },
    )
