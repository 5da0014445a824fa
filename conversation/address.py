"""The person's form of address (du / Sie) for every text Nova sends, not only the model's.

Nova's own texts (questions of the gate, errors, notes, UI sentences) are written in du-form;
``for_person`` gives them in the form the person's standing rules demand. Which form that is,
an app that knows it tells conversation through ``register_address_resolver`` (directives: an
active "Sieze mich" rule); conversation imports no such app.

``to_sie`` rewrites pronouns and the verb beside "du" deterministically. It cannot know every
imperative ("schreib mir" stays), so a text with an imperative passes its Sie wording
explicitly: ``for_person(du_text, user=user, sie="Schreiben Sie mir …")``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)


class AddressForm(StrEnum):
    DU = "du"
    SIE = "sie"


AddressResolver = Callable[["User"], "AddressForm | None"]

_RESOLVERS: dict[str, AddressResolver] = {}


def register_address_resolver(name: str, resolver: AddressResolver) -> None:
    """Add (or, under the same name, replace) a source of the person's form of address; it
    answers ``None`` when it has no opinion."""
    _RESOLVERS[name] = resolver


def unregister_address_resolver(name: str) -> None:
    _RESOLVERS.pop(name, None)


def address_form(user: User | None) -> AddressForm:
    """The form the person's rules demand; du when no resolver knows better (or no person)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return AddressForm.DU
    for name, resolver in _RESOLVERS.items():
        try:
            form = resolver(user)
        except Exception:
            # A broken resolver must not cost the person the message; it is named in the log.
            logger.exception("address resolver failed", extra={"resolver": name})
            continue
        if form is not None:
            return form
    return AddressForm.DU


def for_person(
    text: str,
    *,
    user: User | None = None,
    form: AddressForm | None = None,
    sie: str | None = None,
) -> str:
    """``text`` (du-form) in the person's form of address; ``sie`` is the explicit Sie
    wording where the automatic rewrite would miss an imperative."""
    wanted = form if form is not None else address_form(user)
    if wanted is AddressForm.DU:
        return text
    return sie if sie is not None else to_sie(text)


_PRONOUNS = {
    "du": "Sie",
    "dich": "Sie",
    "dir": "Ihnen",
    "dein": "Ihr",
    "deine": "Ihre",
    "deinen": "Ihren",
    "deinem": "Ihrem",
    "deiner": "Ihrer",
    "deines": "Ihres",
}
_VERBS = {
    "hast": "haben",
    "bist": "sind",
    "kannst": "können",
    "willst": "wollen",
    "weißt": "wissen",
    "musst": "müssen",
    "darfst": "dürfen",
    "sollst": "sollen",
    "magst": "mögen",
    "liest": "lesen",
    "siehst": "sehen",
    "gibst": "geben",
    "nimmst": "nehmen",
    "wirst": "werden",
    "hattest": "hatten",
    "warst": "waren",
    "möchtest": "möchten",
    "könntest": "könnten",
    "würdest": "würden",
}
_TOKEN = re.compile(r"[A-Za-zÄÖÜäöüß]+|[^A-Za-zÄÖÜäöüß]+")


def _verb_to_sie(word: str) -> str:
    lower = word.lower()
    if lower in _VERBS:
        out = _VERBS[lower]
    elif lower.endswith("st") and len(lower) > 4:
        out = lower[:-2] + "en"
    else:
        return word
    return out.capitalize() if word[:1].isupper() else out


def to_sie(text: str) -> str:
    """du-form → Sie-form for pronouns and the verb next to "du" (where it can)."""
    tokens = _TOKEN.findall(text)
    words = [i for i, t in enumerate(tokens) if t[:1].isalpha()]
    out = list(tokens)
    for pos, i in enumerate(words):
        lower = tokens[i].lower()
        if lower in _PRONOUNS:
            out[i] = _PRONOUNS[lower]
            if lower == "du":
                for j in (pos - 1, pos + 1):
                    if 0 <= j < len(words):
                        out[words[j]] = _verb_to_sie(tokens[words[j]])
    return "".join(out)
