"""Content stems of German text through PostgreSQL's ``german`` configuration (stop words out,
words stemmed): the same normalisation as the library's full text, so the planner and the
search agree on what a term is."""

from __future__ import annotations

from django.db import connection

_SQL = """
    SELECT u.ord, ARRAY(
        SELECT l FROM unnest(tsvector_to_array(to_tsvector('german', u.t))) l
        WHERE length(l) >= 3 AND l !~ '^[0-9]+$'
    )
    FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, ord)
    ORDER BY u.ord
"""


def stems_many(texts: list[str]) -> list[list[str]]:
    """Sorted content stems of each text, in one query."""
    if not texts:
        return []
    with connection.cursor() as cur:
        cur.execute(_SQL, [[t or "" for t in texts]])
        rows = cur.fetchall()
    return [sorted(set(r[1] or [])) for r in rows]


def term_matches(a: str, b: str) -> bool:
    """Equal stems, or a German compound and its head or first part (Salienz|schwelle,
    Kenn|linie): the shorter must have at least 5 letters, so "art" never matches "Kunstart"."""
    if a == b:
        return True
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 5 and (long_.endswith(short) or long_.startswith(short))


def shared(memory_terms: list[str], other: list[str]) -> list[str]:
    """Memory terms that match one of ``other``, in memory order."""
    return [t for t in memory_terms if any(term_matches(t, o) for o in other)]
