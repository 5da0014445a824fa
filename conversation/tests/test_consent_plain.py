"""Issue 12: plain German consents ("sicher", "passt so" …) execute; the closed grammar holds.

Added beside the 1,200+ case table of test_consent.py, which stays unchanged: a whole-answer
consent is accepted only as the whole answer, and nothing that is not plain consent executes.
"""

from __future__ import annotations

import pytest

from conversation.consent import WHOLE_CONSENTS, read_answer
from conversation.vocabulary import ConsentOutcome, QuestionKind

EXECUTE = [
    "sicher",
    "Sicher.",
    "sicher!",
    "Sicher doch",
    "ja sicher",
    "Ja sicher doch!",
    "aber sicher",
    "Ganz sicher!",
    "passt so",
    "Passt so.",
    "Passt so, danke",
    "das passt so",
    "So passt es",
    "klingt gut",
    "Hört sich gut an!",
    "Mach es so",
    "genau so",
    "Richtig so",
    "perfekt so",
]

NEVER = [
    "sicher?",
    "Sicher???",
    "bist du sicher",
    "sicher nicht",
    "sicher ist sicher",
    "nicht so sicher",
    "passt so nicht",
    "passt das so",
    "passt so?",
    "passt schon",
    "so",
    "klingt gut, aber später",
    "klingt nicht gut",
    "mach es so, aber morgen",
    "sicher, aber erst morgen",
    "Sicher 🤔",
    "genau so nicht",
    "passt so lieber nicht",
    "hört sich gut an?",
]


@pytest.mark.parametrize("text", EXECUTE)
def test_plain_consent_executes(text: str) -> None:
    assert read_answer(text).outcome == ConsentOutcome.CONSENT


@pytest.mark.parametrize("text", NEVER)
def test_what_is_not_plain_consent_never_executes(text: str) -> None:
    assert read_answer(text).outcome != ConsentOutcome.CONSENT


@pytest.mark.parametrize("text", EXECUTE)
def test_a_choice_question_never_executes_on_plain_consent(text: str) -> None:
    assert read_answer(text, kind=QuestionKind.CHOICE).outcome != ConsentOutcome.CONSENT


@pytest.mark.parametrize("phrase", sorted(WHOLE_CONSENTS))
def test_every_whole_consent_asks_again_with_a_word_more(phrase: str) -> None:
    for extra in ("morgen", "später", "vielleicht", "oder"):
        assert read_answer(f"{phrase} {extra}").outcome != ConsentOutcome.CONSENT
        assert read_answer(f"{extra} {phrase}").outcome != ConsentOutcome.CONSENT
