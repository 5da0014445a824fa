"""The sentence guard withholds a claimed write that the turn did not execute
(``conversation.pipeline.claims``), on the stream, before the sentence is sent; a claim the
turn's executed write covers goes out unchanged. A kind registered here stands in for an app's
(conversation names no app)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conversation.pipeline import claims
from conversation.pipeline.stream_guard import SentenceGuard

KIND = claims.ActionKind(
    name="zettelkasten",
    agent="zettel",
    nouns=frozenset({"zettel"}),
    verbs=frozenset({"abheften"}),
    steps=frozenset({"abgeheftet"}),
)


@pytest.fixture(autouse=True)
def kind() -> Iterator[None]:
    claims.register_action_kind(KIND)
    yield
    claims.unregister_action_kind(KIND.name)


def stream(guard: SentenceGuard, text: str) -> None:
    for i in range(0, len(text), 7):  # tokens cut anywhere, as a model streams them
        guard.feed(text[i : i + 7])
    guard.close()


@pytest.mark.parametrize(
    ("sentence", "verb"),
    [
        pytest.param("Ich habe deinen Zettel gelöscht.", "löschen", id="perfekt"),
        pytest.param("Alle Zettel wurden entfernt.", "entfernen", id="passiv"),
        pytest.param("Ich hefte den Zettel jetzt ab.", "abheften", id="eigenes-verb"),
        pytest.param("Zettel abgeheftet.", "abheften", id="ellipse"),
    ],
)
def test_claims_of_a_registered_kind(sentence: str, verb: str) -> None:
    claim = claims.sentence_claim(sentence)
    assert claim is not None and claim.verb == verb and claim.kinds == ("zettelkasten",)


@pytest.mark.parametrize(
    "sentence",
    [
        pytest.param("Soll ich den Zettel löschen?", id="frage"),
        pytest.param("Ich kann den Zettel löschen, wenn du willst.", id="angebot"),
        pytest.param("Ich habe keinen Zettel gelöscht.", id="verneint"),
        pytest.param("Du hast gesagt: „Ich habe den Zettel gelöscht.“", id="zitat"),
        pytest.param("Ich habe deine Akte gelöscht.", id="kein-registriertes-objekt"),
    ],
)
def test_no_claim(sentence: str) -> None:
    assert claims.sentence_claim(sentence) is None


def test_the_guard_withholds_an_uncovered_claim_and_sends_the_rest() -> None:
    seen: list[str] = []
    guard = SentenceGuard(
        form=None, terms=[], emit=seen.append, claims=claims.ClaimCheck(executed=set())
    )

    stream(guard, "Ich habe alle deine Zettel gelöscht. Was machen wir heute?")

    assert "".join(seen) == "Was machen wir heute?"
    assert [c["satz"] for c in guard.unbelegt] == ["Ich habe alle deine Zettel gelöscht."]
    assert not guard.withheld  # not a rule violation: the stream went on


def test_a_covered_claim_is_sent_unchanged() -> None:
    seen: list[str] = []
    check = claims.ClaimCheck(executed={"zettelkasten"})
    guard = SentenceGuard(form=None, terms=[], emit=seen.append, claims=check)

    stream(guard, "Ich habe den Zettel abgeheftet. Sonst noch etwas?")

    assert "".join(seen) == "Ich habe den Zettel abgeheftet. Sonst noch etwas?"
    assert guard.unbelegt == [] and check.covered[0]["verb"] == "abheften"


def test_a_sentence_from_the_agents_own_text_is_not_the_models_claim() -> None:
    """A read agent quotes a file ("Ich habe den Zettel gelöscht." in a diary): the sentence
    comes from the server's result, not from the model, and is shown."""
    check = claims.ClaimCheck(
        executed=set(), trusted="tagebuch md zeile 3 ich habe den zettel gelöscht"
    )
    assert check("Ich habe den Zettel gelöscht.") is None
    assert check("Ich habe alle Zettel gelöscht.") is not None
