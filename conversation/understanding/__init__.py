"""What a person means by a message, offline: an order about Nova's rules (which action), a
folder order, a read request, a knowledge request, or conversation (issue 28).

``understand(text)`` weighs two readers:

- the **intent classifier** (``model``), trained on the corpus's train split over German
  morphology (HanTa lemmas and parts of speech: the imperative or modal sentence aimed at Nova,
  negation, the rule's object) and character n-grams (typos);
- the **agents' own patterns** (``Agent.detect``): an agent whose intents the corpus does not
  know (a plug-in added later) is routed by its patterns alone.

The corpus's labels name intents; an agent says which it serves (``Agent.intents``, default its
name), so the core names no agent here. Nothing executes on this reading: a writing agent still
asks the person, and with a language model the model decides (``conversation.pipeline.router``),
this reading being its fallback and cross-check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conversation.agents import Agent, all_agents
from conversation.understanding import model as intent_model
from conversation.understanding.features import ORDER_FORMS

CONVERSATION = "gespraech"

__all__ = [
    "CONVERSATION",
    "Understanding",
    "addressed_to_nova",
    "agent_for",
    "is_order",
    "understand",
]


@dataclass(frozen=True)
class Understanding:
    intent: str  # a corpus label ("create", "read", "files", "wissen" …) or "gespraech"
    route: str  # the agent's name, or "gespraech"
    confidence: float
    by: str  # "klassifikator" | "klassifikator_ohne_beleg" | "muster" | "leer"
    ranked: tuple[tuple[str, float], ...] = field(default_factory=tuple)
    features: frozenset[str] = frozenset()

    def details(self) -> dict[str, Any]:
        return {
            "absicht": self.intent,
            "route": self.route,
            "sicherheit": round(self.confidence, 3),
            "durch": self.by,
            "kandidaten": [[label, round(p, 3)] for label, p in self.ranked[:3]],
        }


def intents_of(agent: Agent) -> tuple[str, ...]:
    own = getattr(agent, "intents", None)
    if isinstance(own, tuple | list) and own:
        return tuple(str(i) for i in own)
    return (agent.name,)


def agent_for(intent: str, agents: list[Agent] | None = None) -> str:
    for agent in agents if agents is not None else all_agents():
        if intent in intents_of(agent):
            return agent.name
    return CONVERSATION


# Below this confidence in "conversation", an agent's own pattern may still claim the message
# (chosen on the dev split and train cross-validation, bench/bench_routing.py).
PATTERN_OVERRULES_BELOW = 0.7
RULE_WRITES = frozenset({"create", "update", "delete", "reactivate"})
# What a change, deletion or reactivation said without an order form still carries.
MANAGING_WORDS = frozenset(
    {
        "vk=aendern",
        "vk=loeschen",
        "vk=zurueckholen",
        "cue",
        "an_nova",
        "verboten",
        "l=wieder",
        "l=gelten",
        "l=auch",
        "l=noch",
        "l=zurück",
        "l=raus",
        "l=weg",
        "l=aktiv",
        "l=ausnahme",
    }
)
# Intents that end in a write after the person's consent, and the evidence each needs besides
# the classifier's vote when the message has no order form (``plausible``): all of one of
# these sets. A statement about the speaker ("Ich will nie wieder Tequila trinken"), a thank-you
# ("Danke, dass du immer zuhörst") or an opinion about a rule ("Die Regel mit dem Abstand ist
# sinnvoll") has none, and stays conversation (issue 28: 0 ordinary messages to a writing
# action).
_EVIDENCE: dict[str, tuple[frozenset[str], ...]] = {
    "create": (
        frozenset({"form=ich_wunsch", "an_nova"}),
        frozenset({"cue", "form=du_subjekt"}),
        frozenset({"cue", "form=du_aussage"}),
        frozenset({"cue", "form=wenn_du"}),
        frozenset({"cue", "sie_anrede"}),
        frozenset({"form=norm"}),
        frozenset({"anrede", "l=bitte"}),
    ),
    "update": (frozenset({"obj=regel"}), frozenset({"vk=aendern"})),
    "delete": (frozenset({"obj=regel"}), frozenset({"vk=loeschen", "an_nova"})),
    "reactivate": (frozenset({"obj=regel"}), frozenset({"vk=zurueckholen"})),
    "undo": (
        frozenset({"l=rückgängig"}),
        frozenset({"obj=regel"}),
        frozenset({"l=änderung"}),
        frozenset({"l=zurück"}),
        frozenset({"vk=zurueckholen"}),
        frozenset({"l=rollback"}),
        frozenset({"l=undo"}),
        frozenset({"vk=aendern"}),
        frozenset({"l=zurücksetzen"}),
    ),
    "files": (frozenset({"obj=pfad"}), frozenset({"obj=ordner"})),
    "wissen": (
        frozenset({"obj=wissen"}),
        frozenset({"obj=dateiname"}),
        frozenset({"vk=lernen", "an_nova"}),
    ),
}


def plausible(intent: str, features: frozenset[str]) -> bool:
    """Can the message mean this writing intent at all? Other intents need no evidence.

    The gate only vetoes what the sentence's form rules out (chosen by cross-validation on the
    train split and the dev split: a stricter gate lost more orders than it saved chat):
    a question without an order form sets no rule; a wish ("Pass auf dich auf") or a one-off
    request ("Erzähl mir etwas über den Sommer") is no rule; a statement about the speaker or
    others ("Ich war noch nie in Rom", "Mein Opa hat immer gesagt: Vergiss nie …") carries no
    order form and does not address Nova; a folder or knowledge intent needs its object.
    """
    if intent not in _EVIDENCE:
        return True
    forms = features & ORDER_FORMS
    if intent == "create":
        if forms == {"form=bitte_modal"} and not features & {"cue", "neg"}:
            return False  # "Kannst du mir ein Gedicht schreiben?" asks for one thing
        timeless = not features & {"cue", "neg", "verboten", "anrede"}
        if timeless and (
            "einmalig" in features
            or not features
            & {"art_und_weise", "an_mich", "form=verbloses_verbot", "form=norm", "obj=regel"}
        ):
            return False  # "Pass auf dich auf", "Erzähl mir etwas": a wish or a one-off
        if forms:
            return True
        if "frage" in features or "zitat" in features:
            return False  # asked, or what someone else once said
        return not timeless and bool(
            features & {"an_nova", "sie_anrede", "verboten", "anrede", "obj=regel", "art_und_weise"}
        )
    if forms:
        return True
    if "zitat" in features:
        return False
    if intent in RULE_WRITES and not features & MANAGING_WORDS:
        return False  # "Die Regel mit dem Abstand ist sinnvoll": an opinion, not an order
    if "frage" in features and intent in RULE_WRITES:
        return False  # a question without an order form asks; it changes no rule
    if "frage" in features and not features & {"an_nova", "sie_anrede"}:
        return False  # "Wie kann ich in Google Drive einen Ordner freigeben?" asks the world
    return any(needed <= features for needed in _EVIDENCE[intent])


def _agent_plausible(agent: Agent, features: frozenset[str]) -> bool:
    """An agent's pattern may claim a message when one of its intents is plausible; for an
    agent that also writes, a writing intent must be (its read intents need no evidence)."""
    intents = intents_of(agent)
    checked = [i for i in intents if i in _EVIDENCE]
    if not checked:
        return True
    return any(plausible(i, features) for i in checked)


def _first_plausible(ranked: tuple[tuple[str, float], ...], features: frozenset[str]) -> str:
    for label, _p in ranked:
        if plausible(label, features):
            return label
    return CONVERSATION


def understand(
    text: str, agents: list[Agent] | None = None, trained: intent_model.IntentModel | None = None
) -> Understanding:
    agents = all_agents() if agents is None else agents
    if not text or not text.strip():
        return Understanding(CONVERSATION, CONVERSATION, 1.0, "leer")
    known = set((trained or intent_model.model()).labels)
    # A plug-in the corpus does not know speaks for itself, by its own patterns, first.
    for agent in agents:
        if not set(intents_of(agent)) & known and agent.detect(text):
            return Understanding(agent.name, agent.name, 1.0, "muster")
    scores = (
        trained.scores(text[:2000]) if trained is not None else intent_model.scores(text[:2000])
    )
    label = _first_plausible(scores.ranked, scores.features)
    by = "klassifikator" if label == scores.label else "klassifikator_ohne_beleg"
    chat = dict(scores.ranked).get(CONVERSATION, 0.0)
    if label == CONVERSATION and chat < PATTERN_OVERRULES_BELOW:
        # An agent's own reader may recognise an order the classifier has not seen the like of;
        # it is heard where the classifier is unsure and the message carries the evidence.
        for agent in agents:
            if agent.detect(text) and _agent_plausible(agent, scores.features):
                return Understanding(
                    agent.name, agent.name, 1.0, "muster", scores.ranked, scores.features
                )
        return Understanding(CONVERSATION, CONVERSATION, chat, by, scores.ranked, scores.features)
    route = agent_for(label, agents)
    intent = label if route != CONVERSATION else CONVERSATION
    confidence = dict(scores.ranked).get(label, 0.0)
    return Understanding(intent, route, confidence, by, scores.ranked, scores.features)


def addressed_to_nova(text: str) -> bool:
    """Is this message something the person asks of Nova — an order for some agent, or a
    sentence aimed at her as an order (an imperative, "du sollst", "ich will, dass du …"), even
    one no agent takes? Such a message is no statement about the person or the world."""
    if not text.strip():
        return False
    reading = understand(text)
    if reading.route != CONVERSATION:
        return True
    features = reading.features
    return (
        bool(features & (ORDER_FORMS - {"form=bitte_modal"}))
        and "einmalig" not in features
        and plausible("create", features)
    )


def is_order(text: str) -> bool:
    """Does this message ask some agent for something (not conversation)?"""
    return understand(text).route != CONVERSATION


def warm_up_in_background() -> None:
    intent_model.warm_up_in_background()
