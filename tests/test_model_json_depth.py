"""A model answer nested thousands of levels deep is an unreadable answer with a named step,
never a ``RecursionError`` that ends the turn, the index run or the return path (issue 27).
Every checked reader of model JSON goes through ``novaberg.parsers.loads_checked``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conversation.pipeline.router import read_route
from conversation.pipeline.sachlage import read_doubts
from conversation.pipeline.vector import read_vector
from directives.agent.classify import ReadError, parse_answer
from directives.tribunal import read_verdict
from files.watcher.enrich import EnrichReadError, read_enrichment
from knowledge.learn import DistilReadError, read_distillate
from knowledge.rueckweg.planner import PlanReadError, read_plan

DEEP = '{"a": ' * 3000 + "1" + "}" * 3000
DEEP_LIST = "[" * 3000 + "]" * 3000


def _raises_named(call: Callable[[str], Any], error: type[Exception]) -> Callable[[str], str]:
    def run(text: str) -> str:
        with pytest.raises(error) as caught:
            call(text)
        return str(getattr(caught.value, "step", ""))

    return run


READERS: dict[str, Callable[[str], str]] = {
    "router": lambda t: read_route(t, {"directives"}).step,
    "sachlage": lambda t: read_doubts(t)[1],
    "vector": lambda t: read_vector(t)[1],
    "tribunal": lambda t: str(read_verdict(t).details.get("step", "")),
    "rules_classifier": _raises_named(lambda t: parse_answer(t, {}), ReadError),
    "enrichment": _raises_named(read_enrichment, EnrichReadError),
    "planner": _raises_named(lambda t: read_plan(t, {1}), PlanReadError),
    "distillate": _raises_named(
        lambda t: read_distillate(t, total_lines=10, limit=5), DistilReadError
    ),
}


@pytest.mark.parametrize("text", [DEEP, DEEP_LIST], ids=["objects", "lists"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_deeply_nested_model_answer_is_a_named_unreadable_answer(reader: str, text: str) -> None:
    step = READERS[reader](text)
    assert step in {"kein_json", "llm_kein_json"}, step
