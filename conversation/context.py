"""The context-provider registry: what other apps contribute to a turn, and where it stands.

``conversation`` is the core and imports no other app. An app that has something for the turn
registers it in its ``AppConfig.ready()``:

- a **composer source** (``ComposerSource``): searched once per turn with the one turn vector,
  rendered as its own block for the composer (files: ``[AUFZEICHNUNGEN]``; a library of Nova's
  own knowledge: ``[EIGENES WISSEN]``);
- a **contract block** (``ContractBlock``): the person's standing rules for Nova's voice, in the
  responder's prompt, last (directives: ``[DIREKTIVEN]``);
- a **reply check** (``ReplyCheck``): the tribunal runs it on the finished reply (directives).

The placement rules live here and nowhere else (DESIGN.md "One turn"; seed 003 §2.2):

composer   AUFGABE, GEDAECHTNIS, <own-knowledge sources>, <records sources>, SACHLAGE,
           GESPRAECHSVEKTOR, GESPRAECHSVERLAUF
responder  IDENTITAET, EIGENE_EMOTION, KOMMUNIKATION, GESPRAECHSVERLAUF, INHALT, REGELN,
           KORREKTUR (the last reply's verdict), <contract blocks> — last (seed 000 §8.1)

A source can only be placed in a composer slot and a contract only at the responder's end, so
memory, records and knowledge never reach the responder (seed 003 §2.2: what it could add, it
would have to invent), and there is no way to register them there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from conversation.models import Character

logger = logging.getLogger(__name__)


class Slot(StrEnum):
    """Where a contributed block stands; the order of the layouts below is the rule."""

    # Nova's own worked-out knowledge: hers, so it follows her memory directly.
    OWN_KNOWLEDGE = "eigenes_wissen"
    # Records from files released to her, each with its citation: not hers, after her own.
    RECORDS = "aufzeichnungen"
    # The person's standing rules for her voice: the last block of the responder's prompt.
    CONTRACT = "vertrag"


# The blocks conversation renders itself, with the slots that contributed blocks fill.
COMPOSER_LAYOUT: tuple[str | Slot, ...] = (
    "AUFGABE",
    "GEDAECHTNIS",
    Slot.OWN_KNOWLEDGE,
    Slot.RECORDS,
    "SACHLAGE",
    "GESPRAECHSVEKTOR",
    "GESPRAECHSVERLAUF",
)
RESPONDER_LAYOUT: tuple[str | Slot, ...] = (
    "IDENTITAET",
    "EIGENE_EMOTION",
    "KOMMUNIKATION",
    "GESPRAECHSVERLAUF",
    "INHALT",
    "REGELN",
    "KORREKTUR",
    Slot.CONTRACT,
)
COMPOSER_SLOTS = frozenset({Slot.OWN_KNOWLEDGE, Slot.RECORDS})
# Conversation's own blocks that carry injected content, which must not come back as memory.
OWN_INJECTED_BLOCKS = ("REGELN", "KORREKTUR")


@dataclass(frozen=True)
class SourceQuery:
    """What a composer source sees of the turn: the pair, the text and the ONE turn vector
    (seed 002 §3.0: every source searches with the same vector; none embeds the text again)."""

    user: User
    character: Character
    text: str
    query_vector: list[float]


@dataclass(frozen=True)
class SourceFound:
    """A source's items for this turn (``[]``: nothing relevant) and its log details."""

    items: list[dict[str, Any]] = field(default_factory=list)
    log: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ComposerSource:
    """A block for the composer, searched once per turn.

    ``name`` keys the items in the turn state and the enricher's log (``<name>_ms``);
    ``block`` is the block's header name (``"AUFZEICHNUNGEN"`` → ``[AUFZEICHNUNGEN]``), and
    ``render`` returns the whole block with that header, or ``""`` when it has nothing to say.
    The reducer deduplicates a source's items among themselves by ``dedupe_key``, never across
    sources (a file excerpt must not replace a memory and inherit its label). Items of a
    ``RECORDS`` source carry ``path``, ``lines`` and ``citation``: they are the turn's records
    (the answer's ``records``, the tribunal's citation check, the memory's provenance).
    """

    name: str
    block: str
    slot: Slot
    search: Callable[[SourceQuery], SourceFound]
    render: Callable[[list[dict[str, Any]]], str]
    dedupe_key: str
    # Among sources of one slot, ascending; equal orders keep their registration order.
    order: int = 100
    # What the offline composer says from the items (``""``: nothing). Records need none: the
    # offline composer quotes them at their citation itself.
    offline_text: Callable[[list[dict[str, Any]]], str] | None = None


class BlockRenderer(Protocol):
    def __call__(self, *, user: User) -> str: ...


@dataclass(frozen=True)
class ContractBlock:
    """A block at the end of the responder's prompt, rendered for the person every turn
    (``""`` when there is nothing; seed 000 §1: a rule not loaded is not obeyed)."""

    name: str
    block: str
    render: BlockRenderer
    order: int = 100


class Verdict(Protocol):
    """A reply check's answer: ``outcome`` from ``CheckOutcome`` or a named outcome of the
    check's own, the violations found, and details for the inspector."""

    @property
    def outcome(self) -> str: ...

    @property
    def violations(self) -> Sequence[str]: ...

    @property
    def details(self) -> Mapping[str, Any]: ...


class ReplyReviewer(Protocol):
    def __call__(self, *, user: User, reply: str) -> Verdict: ...


@dataclass(frozen=True)
class ReplyCheck:
    """A check the tribunal runs on the finished reply; its verdict is kept under ``name`` in
    the turn's checks, and a violation makes ``violation_outcome`` the tribunal's outcome."""

    name: str
    review: ReplyReviewer
    violation_outcome: str
    order: int = 100


_SOURCES: dict[str, ComposerSource] = {}
_CONTRACTS: dict[str, ContractBlock] = {}
_CHECKS: dict[str, ReplyCheck] = {}


def _own_blocks() -> set[str]:
    return {name for name in (*COMPOSER_LAYOUT, *RESPONDER_LAYOUT) if not isinstance(name, Slot)}


def _check_block_name(block: str, name: str, taken: dict[str, str]) -> None:
    if block in _own_blocks():
        raise ValueError(f"{name}: [{block}] is conversation's own block")
    owner = taken.get(block)
    if owner is not None and owner != name:
        raise ValueError(f"{name}: [{block}] is already contributed by {owner}")


def _taken() -> dict[str, str]:
    return {
        **{s.block: s.name for s in _SOURCES.values()},
        **{c.block: c.name for c in _CONTRACTS.values()},
    }


def register_composer_source(source: ComposerSource) -> None:
    """Add (or, under the same ``name``, replace) a composer source; only composer slots."""
    if source.slot not in COMPOSER_SLOTS:
        raise ValueError(f"{source.name}: a composer source cannot stand in slot {source.slot}")
    _check_block_name(source.block, source.name, _taken())
    _SOURCES[source.name] = source


def register_contract_block(contract: ContractBlock) -> None:
    """Add (or, under the same ``name``, replace) a block at the end of the responder's prompt."""
    _check_block_name(contract.block, contract.name, _taken())
    _CONTRACTS[contract.name] = contract


def register_reply_check(check: ReplyCheck) -> None:
    """Add (or, under the same ``name``, replace) a check of the finished reply."""
    if check.name == "zitate":
        raise ValueError("zitate is the tribunal's own citation check")
    _CHECKS[check.name] = check


def unregister(name: str) -> None:
    """Remove whatever is registered under ``name`` (for tests that plug in their own)."""
    _SOURCES.pop(name, None)
    _CONTRACTS.pop(name, None)
    _CHECKS.pop(name, None)


_Registered = TypeVar("_Registered", ComposerSource, ContractBlock, ReplyCheck)


def _ordered(items: dict[str, _Registered]) -> list[_Registered]:
    # sorted() is stable: equal orders keep their registration order.
    return sorted(items.values(), key=lambda item: item.order)


def composer_source(name: str) -> ComposerSource | None:
    return _SOURCES.get(name)


def composer_sources() -> list[ComposerSource]:
    """Every composer source, in the order their blocks stand in the composer's prompt."""
    by_slot = {slot: i for i, slot in enumerate(COMPOSER_LAYOUT) if isinstance(slot, Slot)}
    return sorted(_ordered(_SOURCES), key=lambda source: by_slot[source.slot])


def contract_blocks() -> list[ContractBlock]:
    return _ordered(_CONTRACTS)


def reply_checks() -> list[ReplyCheck]:
    return _ordered(_CHECKS)


def composer_order() -> list[str]:
    """The composer's block names in prompt order, contributed blocks in their slots."""
    sources = composer_sources()
    return [
        block
        for entry in COMPOSER_LAYOUT
        for block in (
            [s.block for s in sources if s.slot == entry] if isinstance(entry, Slot) else [entry]
        )
    ]


def responder_order() -> list[str]:
    """The responder's block names in prompt order; the contract blocks are the last ones."""
    contracts = [c.block for c in contract_blocks()]
    return [
        block
        for entry in RESPONDER_LAYOUT
        for block in (contracts if entry == Slot.CONTRACT else [entry])
    ]


def render_source(source: ComposerSource, items: list[dict[str, Any]]) -> str:
    """The source's block; a block must open with its own header, so its content can never
    pass as part of another block (seed 002 §1a: records are not memory)."""
    text = source.render(items)
    header = f"[{source.block}]"
    if text and not text.startswith(header + "\n"):
        logger.error("context source %s rendered a block without its header", source.name)
        text = f"{header}\n{text}"
    return text


def records_of(found: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The turn's records: the items of every records source, in prompt order."""
    return [
        item
        for source in composer_sources()
        if source.slot == Slot.RECORDS
        for item in found.get(source.name, [])
    ]


def delivered_records(
    blocks: Mapping[str, str], found: Mapping[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Records whose block stood in the composer's prompt this turn: only these count as
    delivered (for the citation check and the memory's provenance)."""
    return [
        item
        for source in composer_sources()
        if source.slot == Slot.RECORDS and blocks.get(source.block)
        for item in found.get(source.name, [])
    ]


def injected_blocks() -> list[str]:
    """Blocks whose content was put into the prompts; restating one is not a memory."""
    return [
        *(c.block for c in contract_blocks()),
        *(s.block for s in composer_sources()),
        *OWN_INJECTED_BLOCKS,
    ]
