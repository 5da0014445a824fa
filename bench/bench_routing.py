"""Routing benchmark: the labelled German messages of
``directives/tests/routing_set.json`` through the router, offline and with the fake model.

A message's predicted class is the router's route, and for the directives agent the action
its offline classifier reads ("rejected" counts as not routed). Printed: precision and recall
per class, the confusion table, chat messages that reached a writing action (target: none)
and the recall on orders (target: ≥ 0.9). Written to bench/results/routing.md with machine,
commit and date.

The model run scripts the fake OpenAI-compatible server twice: answering the router's
classification prompt with the labelled route (a model that is right: the wiring, the reader
and the patterns' pre-filter are measured, not a model's judgement), and babbling (every
answer unreadable: the router must fall back to exactly the offline figures).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
SET_PATH = BASE_DIR / "directives" / "tests" / "routing_set.json"
DIRECTIVE_ACTIONS = ("create", "read", "update", "delete", "reactivate", "undo")
# Agents that may write after a question ("wissen" deletes a paragraph of her library).
WRITING = frozenset({"create", "update", "delete", "reactivate", "undo", "files", "wissen"})
ORDERS = frozenset({*DIRECTIVE_ACTIONS, "files", "dateien_lesen"})
CLASSES = (*DIRECTIVE_ACTIONS, "files", "dateien_lesen", "gespraech")


def load_set() -> list[dict[str, str]]:
    return list(json.loads(SET_PATH.read_text(encoding="utf-8"))["messages"])


def predict(text: str, route: str) -> str:
    """The class a routed message ends in (directives: the offline classifier's action)."""
    if route != "directives":
        return route
    from directives.agent.offline import classify_offline

    action = str(json.loads(classify_offline([], {"text": text, "history": []}))["action"])
    return "gespraech" if action == "rejected" else action


def evaluate(route_of: Callable[[str], str]) -> dict[str, Any]:
    rows = load_set()
    pairs = [(row["label"], predict(row["text"], route_of(row["text"]))) for row in rows]
    confusion: Counter[tuple[str, str]] = Counter(pairs)
    per_class: dict[str, dict[str, float]] = {}
    for name in CLASSES:
        tp = confusion[(name, name)]
        predicted = sum(n for (_, p), n in confusion.items() if p == name)
        actual = sum(n for (a, _), n in confusion.items() if a == name)
        per_class[name] = {
            "precision": tp / predicted if predicted else 1.0,
            "recall": tp / actual if actual else 1.0,
            "n": actual,
        }
    orders = [(a, p) for a, p in pairs if a in ORDERS]
    # An order counts as recalled when it reaches its agent (the action may still be asked).
    reached = sum(
        1 for a, p in orders if (p in DIRECTIVE_ACTIONS) == (a in DIRECTIVE_ACTIONS) and p in ORDERS
    )
    chat_to_writing = [
        row["text"]
        for row, (a, p) in zip(rows, pairs, strict=True)
        if a == "gespraech" and p in WRITING
    ]
    return {
        "n": len(rows),
        "confusion": confusion,
        "per_class": per_class,
        "order_recall": reached / len(orders) if orders else 1.0,
        "chat_to_writing": chat_to_writing,
        "missed": [
            f"{row['text']} ({a} → {p})" for row, (a, p) in zip(rows, pairs, strict=True) if a != p
        ],
    }


def render(title: str, result: dict[str, Any]) -> str:
    confusion: Counter[tuple[str, str]] = result["confusion"]
    predicted = [c for c in CLASSES if any(p == c for _, p in confusion)] + sorted(
        {p for _, p in confusion} - set(CLASSES)
    )
    lines = [
        f"#### {title}",
        "",
        f"{result['n']} messages · order recall (reached the right agent) "
        f"{result['order_recall']:.3f} · chat routed to a writing action: "
        f"{len(result['chat_to_writing'])}",
        "",
        "| class | n | precision | recall |",
        "|---|---|---|---|",
        *(
            f"| {name} | {v['n']:.0f} | {v['precision']:.2f} | {v['recall']:.2f} |"
            for name, v in result["per_class"].items()
        ),
        "",
        "Confusion (rows: label, columns: predicted):",
        "",
        "| label \\ predicted | " + " | ".join(predicted) + " |",
        "|---|" + "---|" * len(predicted),
        *(
            f"| {a} | " + " | ".join(str(confusion[(a, p)] or "") for p in predicted) + " |"
            for a in CLASSES
        ),
        "",
    ]
    if result["missed"]:
        lines += ["Misrouted:", "", *(f"- {m}" for m in result["missed"]), ""]
    return "\n".join(lines)


def _model_runs() -> list[tuple[str, dict[str, Any]]]:
    from django.conf import settings

    from conversation.pipeline import router
    from novaberg import llm
    from tests.fakes.openai_server import FakeOpenAI

    labels = {row["text"]: row["label"] for row in load_set()}

    def labelled(body: dict[str, Any]) -> str:
        text = body["messages"][-1]["content"]
        label = labels.get(text, "gespraech")
        ziel = "directives" if label in DIRECTIVE_ACTIONS else label
        return json.dumps({"ziel": ziel, "aktion": label})

    def is_router(body: dict[str, Any]) -> bool:
        return router.PROMPT_MARKER in (body.get("messages") or [{}])[0].get("content", "")

    fake = FakeOpenAI().start()
    saved = (settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL)
    settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = (
        fake.base_url,
        "bench",
        "fake-model",
    )
    llm.reset_gateway()
    out = []
    try:
        fake.add(labelled, match=is_router, times=10_000)
        calls_before = len(fake.chat_requests())
        out.append(("Fake model, answering the labels", evaluate(lambda t: router.route(t)[0])))
        calls = len(fake.chat_requests()) - calls_before
        out[-1][1]["model_calls"] = calls
        fake.reset()  # the babbling run: no scripted answer, only babble
        fake.set_default("Ähm, also, ich denke {ziel: vielleicht")
        out.append(("Fake model, babbling (fallback)", evaluate(lambda t: router.route(t)[0])))
    finally:
        settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = saved
        llm.reset_gateway()
        fake.stop()
    return out


def main() -> int:
    if str(BASE_DIR) not in sys.path:
        sys.path.insert(0, str(BASE_DIR))
    from bench import _django

    _django.setup()
    from conversation.agents import all_agents
    from conversation.pipeline import router

    offline = evaluate(lambda t: router.by_patterns(t, all_agents()))
    parts = [
        "### Routing: labelled German messages through the router",
        "",
        f"Set: {SET_PATH.relative_to(BASE_DIR)}. Targets offline: no chat message routed to a "
        "writing action, order recall ≥ 0.9.",
        "",
        render("Offline (patterns)", offline),
    ]
    for title, result in _model_runs():
        if "model_calls" in result:
            title = f"{title} ({result['model_calls']} router calls)"
        parts.append(render(title, result))
    markdown = "\n".join(parts)
    print(markdown)
    _django.write_result("routing", markdown)
    ok = not offline["chat_to_writing"] and offline["order_recall"] >= 0.9
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
