"""The library as a corpus of its own: the search the per-turn context source will use, and
the reinforcement columns with their computed weight."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from conversation.models import Character
from knowledge import library
from knowledge.models import KnowledgeEntry
from knowledge.selectors import library_candidates, library_search
from knowledge.tests.corpus import make_corpus
from novaberg.embeddings import embed_one


def test_search_finds_the_file_with_its_version(
    corpus: dict[str, Any], user: Any, nova: Character
) -> None:
    text = "Wann sättigt die Kennlinie?"
    found = library_search(user=user, character=nova, vector=embed_one(text), text=text, k=3)
    assert found.hits and found.hits[0].path == "kennlinie.md"
    top = found.hits[0]
    assert (top.version, top.channel, top.rank) == ("1.0", "beide", 1)
    assert "kennlinie" in [k.lower() for k in top.matched_keywords]
    assert found.log["hits"] == len(found.hits) <= 3


def test_search_can_say_nothing_relevant(
    corpus: dict[str, Any], user: Any, nova: Character
) -> None:
    text = "Wie spät ist es eigentlich?"
    found = library_search(
        user=user, character=nova, vector=embed_one(text), text=text, k=3, floor=0.9
    )
    assert found.hits == [] and found.log["dense_passed"] == 0


def test_search_and_candidates_stay_in_the_pair(
    corpus: dict[str, Any], zone: Any, other_user: Any, nova: Character
) -> None:
    from knowledge.zone import pair_dir

    pair_dir(user=other_user, character=nova, create=True)
    theirs = make_corpus(other_user, nova)
    vector = embed_one("Kennlinie")
    own_ids = {e.pk for e in corpus.values()}
    found = library_search(user=other_user, character=nova, vector=vector, text="Kennlinie", k=10)
    near = library_candidates(user=other_user, character=nova, vector=vector, k=10)
    assert {h.entry_id for h in found.hits} <= {e.pk for e in theirs.values()}
    assert {h.entry_id for h in near} == {e.pk for e in theirs.values()}
    assert not own_ids & {h.entry_id for h in near}


def test_candidates_are_ordered_by_cosine(
    corpus: dict[str, Any], user: Any, nova: Character
) -> None:
    near = library_candidates(user=user, character=nova, vector=embed_one("Sauerteig füttern"), k=2)
    assert len(near) == 2 and near[0].path == "sauerteig.md"
    assert near[0].cosine is not None and near[1].cosine is not None
    assert near[0].cosine >= near[1].cosine
    assert "Ansatz" in near[0].headings


def test_effective_weight_halves_after_the_half_life(corpus: dict[str, Any]) -> None:
    entry = corpus["tee.md"]
    since = timezone.now() - timedelta(days=entry.halbwertszeit_tage)
    KnowledgeEntry.objects.filter(pk=entry.pk).update(verstaerkt_am=since, gewicht_roh=2.0)
    entry.refresh_from_db()
    assert library.entry_effective_weight(entry) == pytest.approx(1.0, rel=1e-3)
    annotated = KnowledgeEntry.objects.annotate(w=library.effective_weight_expression()).get(
        pk=entry.pk
    )
    assert annotated.w == pytest.approx(1.0, rel=1e-3)


def test_reinforcement_counts_and_keeps_the_curve_continuous(
    corpus: dict[str, Any], settings: Any
) -> None:
    settings.KNOWLEDGE_REINFORCE_BOOST = 0.5
    entry = corpus["harz.md"]
    KnowledgeEntry.objects.filter(pk=entry.pk).update(
        verstaerkt_am=timezone.now() - timedelta(days=entry.halbwertszeit_tage * 2)
    )
    after = library.library_reinforce(entry_id=entry.pk)
    assert after.haeufigkeit == 2
    assert after.gewicht_roh == pytest.approx(0.25 + 0.5, rel=1e-2)  # decayed weight + boost
    assert library.entry_effective_weight(after) == pytest.approx(0.75, rel=1e-2)
