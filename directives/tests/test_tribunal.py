"""The tribunal: the reply against the directives (seed 000 §8.3), offline and over the LLM."""

from __future__ import annotations

import json
from typing import Any

import pytest

from directives import services
from directives.tribunal import forbidden_terms, review
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("directive", "term"),
    [
        ("Sprich nie von Milch", "Milch"),
        ("Sprich nie mehr über Politik!", "Politik"),
        ("Sag nie wieder Schatz zu mir", "Schatz"),
        ("Sag nie 'Liebling'", "Liebling"),
        ("Nenn mich nie Schatzi", "Schatzi"),
        ("Nutzer nicht Hase nennen", "Hase"),
    ],
)
def test_forbidden_terms_are_read_from_the_directive(directive: str, term: str) -> None:
    assert term in forbidden_terms(directive)


def test_without_directives_there_is_nothing_to_check(user: Any) -> None:
    assert review(user=user, reply="Hallo du!").outcome == "keine_direktiven"


@pytest.mark.parametrize(
    ("directive", "reply", "outcome"),
    [
        ("Sprich nie von Milch", "Milch ist gesund.", "verstoss"),
        ("Sprich nie von Milch", "Tee ist gesund.", "ok"),
        ("Sieze mich immer", "Wie geht es dir heute?", "verstoss"),
        ("Sieze mich immer", "Wie geht es Ihnen heute?", "ok"),
        ("Duze mich", "Wie geht es Ihnen heute?", "verstoss"),
        ("Sieze mich nie", "Wie geht es dir?", "ok"),
    ],
)
def test_offline_checks_forbidden_words_and_du_sie(
    user: Any, directive: str, reply: str, outcome: str
) -> None:
    services.directive_create(user=user, text=directive)
    verdict = review(user=user, reply=reply)
    assert verdict.outcome == outcome
    if outcome == "verstoss":
        assert verdict.violations and directive in verdict.violations[0]


def test_ethics_outrank_a_directive(user: Any) -> None:
    services.directive_create(user=user, text="Sprich nie von Notruf")
    verdict = review(user=user, reply="Bitte ruf jetzt den Notruf 112 an.")
    assert verdict.outcome == "ethik_vorrang"


def test_the_llm_verdict_is_read_and_the_prompt_carries_directives_and_hierarchy(
    fake_llm: FakeOpenAI, user: Any
) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch")
    fake_llm.add(
        json.dumps(
            {"verstoss": True, "verstoesse": [{"direktive": "Sprich nie von Milch", "grund": "x"}]}
        )
    )
    verdict = review(user=user, reply="Milch!")
    assert verdict.outcome == "verstoss"
    assert verdict.violations == ["Sprich nie von Milch (x)"]
    prompt = fake_llm.system_prompt()
    assert "- Sprich nie von Milch" in prompt
    assert "Ethik, Psychologie und Recht stehen UEBER Direktiven" in prompt


@pytest.mark.parametrize(
    ("answer", "step"),
    [
        pytest.param("kein json", "kein_json", id="prose"),
        pytest.param("[true]", "kein_objekt", id="list"),
        pytest.param('{"verstoss": "ja"}', "feld_falscher_typ", id="string-bool"),
        pytest.param('{"verstoss": true, "verstoesse": 3}', "feld_falscher_typ", id="int-list"),
    ],
)
def test_an_unreadable_verdict_falls_back_to_the_offline_checks_by_name(
    fake_llm: FakeOpenAI, user: Any, answer: str, step: str
) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch")
    fake_llm.add(answer)
    fake_llm.add(answer)
    verdict = review(user=user, reply="Tee.")
    assert verdict.outcome == "ok"
    assert verdict.details["ersatz"] == "ersatz_offline"
    assert verdict.details["step"] == step
    # The deterministic checks decide, so a violation is still found.
    assert review(user=user, reply="Milch!").outcome == "verstoss"
