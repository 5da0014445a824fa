"""What the directives contribute to every turn, registered in ``DirectivesConfig.ready()``:
the [DIREKTIVEN] block, last in the responder's prompt (seed 000 §8.1), and the tribunal's
check of the reply against them (seed 000 §8.3)."""

from __future__ import annotations

from django.contrib.auth.models import User

from conversation import context
from directives import blocks, tribunal


def _block(*, user: User) -> str:
    # Looked up at call time, so a test may replace ``blocks.directives_block``.
    return blocks.directives_block(user=user)


def _review(*, user: User, reply: str) -> context.Verdict:
    return tribunal.review(user=user, reply=reply)


DIRECTIVES_BLOCK = context.ContractBlock(name="directives", block="DIREKTIVEN", render=_block)
DIRECTIVES_CHECK = context.ReplyCheck(
    name="direktiven", review=_review, violation_outcome="direktive_verletzt"
)


def register() -> None:
    context.register_contract_block(DIRECTIVES_BLOCK)
    context.register_reply_check(DIRECTIVES_CHECK)
