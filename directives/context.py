"""What the directives contribute to every turn, registered in ``DirectivesConfig.ready()``:
the [DIREKTIVEN] block, last in the responder's prompt (seed 000 §8.1), and the tribunal's
check of the reply against them (seed 000 §8.3)."""

from __future__ import annotations

from django.contrib.auth.models import User

from conversation import address, context
from conversation.pipeline import stream_guard
from directives import blocks, selectors, tribunal


def _block(*, user: User) -> str:
    # Looked up at call time, so a test may replace ``blocks.directives_block``.
    return blocks.directives_block(user=user)


def _review(*, user: User, reply: str) -> context.Verdict:
    return tribunal.review(user=user, reply=reply)


DIRECTIVES_BLOCK = context.ContractBlock(name="directives", block="DIREKTIVEN", render=_block)
DIRECTIVES_CHECK = context.ReplyCheck(
    name="direktiven", review=_review, violation_outcome="direktive_verletzt"
)


def _terms(user: User) -> list[tuple[str, str]]:
    return tribunal.terms_for(user=user)


def _address_form(user: User) -> address.AddressForm | None:
    """The form of address the newest active rule about it demands (a later "Duz mich wieder"
    replaces an earlier "Sieze mich")."""
    rows = selectors.directive_list(user=user, active=True).order_by("-created_at", "-id")
    for text in rows.values_list("text", flat=True)[:200]:
        form = tribunal.demanded_form(text)
        if form is not None:
            return address.AddressForm(form)
    return None


def register() -> None:
    context.register_contract_block(DIRECTIVES_BLOCK)
    context.register_reply_check(DIRECTIVES_CHECK)
    address.register_address_resolver("directives", _address_form)
    # seed 000 §8.3: a forbidden term is withheld on the stream, before the person reads it.
    stream_guard.register_forbidden_terms("directives", _terms)
