"""[DIREKTIVEN] block (seed 000 §8.1): the working contract, last in the responder's prompt."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User

from directives.selectors import block_rows

HEADER = (
    "[DIREKTIVEN]\n"
    "Der Nutzer hat folgende absolute Verhaltensanweisungen erteilt.\n"
    "Diese MUESSEN befolgt werden -- sie sind dein Vertrag mit dem Nutzer:"
)


def render_block(rows: list[tuple[str, str]]) -> str:
    if not rows:
        return ""
    lines = [HEADER]
    for text, context in rows:
        lines.append(f"- {text}")
        if context:
            lines.append(f"  (Kontext: {context})")
    return "\n".join(lines)


def directives_block(*, user: User) -> str:
    """The [DIREKTIVEN] block of all active directives of ``user``; "" when there are none.

    Never truncated (seed 000 §1: a directive that is not loaded is not obeyed); when the block
    outgrows ``DIRECTIVES_BLOCK_BUDGET_CHARS`` the person is told at the next write instead
    (see ``budget_note``).
    """
    return render_block(block_rows(user=user))


def budget_note(*, user: User) -> str:
    """A German sentence for the person when the block is over its budget, else ""."""
    size = len(directives_block(user=user))
    budget = settings.DIRECTIVES_BLOCK_BUDGET_CHARS
    if size <= budget:
        return ""
    return (
        f"Hinweis: Deine Direktiven sind zusammen {size} Zeichen lang, mehr als die "
        f"{budget} Zeichen, die ich für sie vorsehe. Ich lade trotzdem alle, aber bitte fass "
        "einige zusammen oder lösche welche, die nicht mehr gelten."
    )
