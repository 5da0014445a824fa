"""What the file service contributes to every turn, registered in ``FilesConfig.ready()``: the
[AUFZEICHNUNGEN] block for the composer (seed 002 §1a, §3.0), searched with the turn vector.
Records never reach the responder; ``conversation.context`` places them."""

from __future__ import annotations

from typing import Any

from conversation import context
from files import blocks, retrieval


def search(query: context.SourceQuery) -> context.SourceFound:
    # Looked up at call time, so a test may replace ``retrieval.records_for_turn``.
    found = retrieval.records_for_turn(
        user=query.user,
        character=query.character,
        query_vector=query.query_vector,
        text=query.text,
    )
    return context.SourceFound(items=[dict(r) for r in found.records], log=dict(found.log))


def render(records: list[dict[str, Any]]) -> str:
    return blocks.records_block(records)


RECORDS_SOURCE = context.ComposerSource(
    name="files",
    block="AUFZEICHNUNGEN",
    slot=context.Slot.RECORDS,
    search=search,
    render=render,
    dedupe_key="citation",
)


def register() -> None:
    context.register_composer_source(RECORDS_SOURCE)
