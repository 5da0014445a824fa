"""The understanding layer's figures on the corpus (issue 28), computed by the benchmark's own
code (``bench/bench_routing.py``) on the product's readers, offline.

The **test** split is frozen: it is read here and by the benchmark, nowhere else, and nothing
was tuned on it. Its targets: orders reach the directives agent ≥ 0.95, rule questions ≥ 0.95,
knowledge and file requests ≥ 0.9, no ordinary message routed to a writing action, no answer
that is not plain consent executes.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench import bench_routing as bench
from conversation.agents import all_agents
from conversation.pipeline import router
from conversation.understanding import model

BASE_DIR = Path(__file__).resolve().parent.parent


def _offline(split: str) -> dict[str, Any]:
    return bench.evaluate(bench.load(split), lambda t: router.by_patterns(t, all_agents()))


def test_the_corpus_is_split_by_its_hash_rule_and_big_enough() -> None:
    seen: dict[str, str] = {}
    for split in ("train", "dev", "test"):
        raw = json.loads((BASE_DIR / bench.CORPUS / f"{split}.json").read_text(encoding="utf-8"))
        for row in raw["messages"]:
            assert row["text"].lower() not in seen, (row["text"], seen.get(row["text"].lower()))
            seen[row["text"].lower()] = split
            if row.get("quelle"):
                assert split == "train"  # earlier tuned-on material is training only
                continue
            bucket = int(hashlib.sha256(row["text"].encode()).hexdigest(), 16) % 10
            assert split == ("train" if bucket < 6 else "dev" if bucket < 8 else "test")
    written = [t for t, s in seen.items() if s in {"dev", "test"}]
    assert len(seen) >= 800 and len(written) >= 400
    assert (
        "FROZEN TEST SPLIT"
        in json.loads((BASE_DIR / bench.CORPUS / "test.json").read_text(encoding="utf-8"))["about"]
    )


def test_the_test_split_is_read_only_by_the_benchmark_and_this_test() -> None:
    found = subprocess.run(
        [
            "git",
            "grep",
            "-l",
            "-e",
            'load("test"',
            "-e",
            'load_split("test"',
            "-e",
            "corpus/test.json",
            "-e",
            '"test.json"',
            "--",
            "*.py",
        ],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert set(found) <= {"bench/bench_routing.py", "tests/test_understanding_figures.py"}, found


def test_the_classifier_never_sees_dev_or_test() -> None:
    trained_on = {row["text"] for row in model.load_split("train")}
    for split in ("dev", "test"):
        assert not trained_on & {row["text"] for row in bench.load(split)}


# The figures measured on the split (README "Understanding"), as floors: a change that reads the
# frozen split worse fails here. Issue 28's targets (orders 0.95, rule questions 0.95,
# knowledge and file requests 0.9, no chat to a writing action) hold on dev; on test, offline,
# orders reach 0.946, knowledge requests 0.86 and one chat message is routed to a writing
# action (asked, never executed): the targets are not yet met there (README).
MEASURED_FLOORS = {
    "dev": {"orders": 0.97, "read": 0.95, "wissen": 0.95, "files": 0.75, "dateien_lesen": 0.95},
    "test": {"orders": 0.94, "read": 0.95, "wissen": 0.85, "files": 0.9, "dateien_lesen": 0.95},
}
CHAT_TO_WRITING_AT_MOST = {"dev": 0, "test": 1}


@pytest.mark.parametrize("split", ["dev", "test"])
def test_offline_figures_hold_what_was_measured(split: str) -> None:
    result = _offline(split)
    floors = MEASURED_FLOORS[split]
    assert result["order_recall"] >= floors["orders"], result["missed"]
    for name in ("read", "wissen", "files", "dateien_lesen"):
        assert result["per_class"][name]["recall"] >= floors[name], (name, result["missed"])
    assert len(result["chat_to_writing"]) <= CHAT_TO_WRITING_AT_MOST[split]


@pytest.mark.parametrize("split", ["dev", "test"])
def test_a_model_that_answers_right_is_heard_for_every_message(split: str) -> None:
    """Through the fake model answering the labels: every message reaches it (no pattern
    pre-filter hides one), and its verdict routes every order and no chat to a writing action."""
    rows = bench.load(split)
    (_, right), (_, babbling) = bench._model_runs(rows)
    assert right["model_calls"] == len(rows)
    assert right["order_recall"] == 1.0 and right["chat_to_writing"] == []
    assert babbling["pairs"] == _offline(split)["pairs"]  # the fallback is the offline reading


@pytest.mark.parametrize("split", ["dev", "test"])
def test_no_answer_but_plain_consent_executes(split: str) -> None:
    result = bench.evaluate_answers(bench.load(split, "antwort"))
    assert result["executed_without_consent"] == []
