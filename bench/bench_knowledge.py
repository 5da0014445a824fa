"""Nova's library: retrieval per turn and the return path, on the product's own code paths.

1. Library retrieval per turn at 1,000 and 10,000 library rows of one pair (the worst case: the
   dense channel filters by the pair and scans exactly). Measured through the registered
   context source (``knowledge.context.search``: dense + lexical + RRF, the floor, the excerpt
   read from the file on disk, the re-opener's comparison with the index) with the turn vector
   already computed, as the enricher hands it over. Rows are clustered around real embeddings
   of generated German notes (packaged model); every row has its Markdown file in the zone.
2. The return path's time per memory, offline backend, on a small library written through the
   write layer (``knowledge.tests.corpus``): each memory is promoted, then
   ``rueckweg_for_memory`` runs (embedding, candidates, planner, incorporation or not).

Run: ``.venv/bin/python bench/bench_knowledge.py``. ``NOVABERG_BENCH_KNOWLEDGE_SCALES=1000``
(comma list) measures fewer scales, e.g. under load; the README's table uses the defaults.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ZONE = Path(tempfile.mkdtemp(prefix="novaberg-bench-wissen-"))
os.environ["NOVABERG_KNOWLEDGE_DIR"] = str(ZONE)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import _django  # noqa: E402

_django.setup()

import numpy as np  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.postgres.search import SearchVector  # noqa: E402
from django.db.models import F  # noqa: E402

from conversation import context  # noqa: E402
from conversation.models import MemoryEntry, Session, Turn  # noqa: E402
from conversation.services import character_default  # noqa: E402
from knowledge import context as knowledge_context  # noqa: E402
from knowledge.models import KnowledgeEdit, KnowledgeEntry, RueckwegRun  # noqa: E402
from knowledge.rueckweg import rueckweg_for_memory  # noqa: E402
from knowledge.tests.corpus import make_corpus  # noqa: E402
from knowledge.zone import pair_dir  # noqa: E402
from novaberg.embeddings import embed, embed_one  # noqa: E402

SCALES = [
    int(s)
    for s in os.environ.get("NOVABERG_BENCH_KNOWLEDGE_SCALES", "1000,10000").split(",")
    if s.strip()
]
QUERIES = 40
SEEDS = 240
SUBJECTS = [
    "Sauerteig", "Kennlinie", "Glasurbrand", "Fahrradkette", "Bienenvolk", "Heizungsventil",
    "Tomatenpflanze", "Datensicherung", "Wanderroute", "Teezubereitung", "Dachrinne",
    "Gitarrensaite", "Kompost", "Zugverbindung", "Steuerbescheid", "Aquarium",
]  # fmt: skip
FACTS = [
    "braucht im Winter mehr Zeit", "wird jeden Morgen kontrolliert", "hängt von der Temperatur ab",
    "lässt sich mit wenig Werkzeug reparieren", "hat sich nach dem Umbau verändert",
    "soll im Frühjahr erneuert werden", "reagiert empfindlich auf Feuchtigkeit",
    "wurde zuletzt im März geprüft",
]  # fmt: skip
MEMORIES = [
    "Die Sättigung der Kennlinie setzt bei hoher Last früher ein, wenn der Speicher voll ist.",
    "Mein Sauerteig wird im Winter langsamer und braucht dann einen wärmeren Platz.",
    "Der Hexenstieg ist im Herbst bei Regen an der Bode rutschig.",
    "Grüner Tee wird bitter, wenn das Wasser kocht.",
    "Die Salienzschwelle für Erinnerungen sollte nach Fristen gestaffelt werden.",
    "Ich habe gestern mit dem Schlagzeugunterricht angefangen.",
    "Mein Bruder zieht im Sommer nach Leipzig.",
    "Das Anstellgut riecht säuerlich, wenn es zu lange nicht gefüttert wurde.",
]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def sentences(rng: random.Random, n: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(n):
        subject = rng.choice(SUBJECTS)
        out.append((subject, f"{subject}: {rng.choice(FACTS)} und {rng.choice(FACTS)}."))
    return out


def reset_pair(user: object, character: object) -> None:
    KnowledgeEdit.objects.filter(user=user).delete()
    KnowledgeEntry.objects.filter(user=user).delete()
    RueckwegRun.objects.filter(user=user).delete()
    MemoryEntry.objects.filter(user=user).delete()
    folder = pair_dir(user=user, character=character)
    shutil.rmtree(folder, ignore_errors=True)
    pair_dir(user=user, character=character, create=True)


def fill_library(user: object, character: object, n: int, rng: random.Random) -> list[str]:
    """n rows with their files; returns held-out query texts."""
    seeds = sentences(rng, SEEDS)
    seed_vectors = np.array(embed([s for _, s in seeds]), dtype=np.float32)
    folder = pair_dir(user=user, character=character, create=True)
    rows = []
    for i in range(n):
        j = i % SEEDS
        subject, text = seeds[j]
        noise = np.random.default_rng(i).normal(0, 0.02, seed_vectors.shape[1])
        vector = seed_vectors[j] + noise
        vector = vector / np.linalg.norm(vector)
        path = f"notiz-{i:05d}.md"
        body = f"# {subject} {i}\n\nVersion: 1.0\n\n## AKTUELL\n\n{text}\n"
        (folder / path).write_text(body, encoding="utf-8")
        rows.append(
            KnowledgeEntry(
                user=user,
                character=character,
                path=path,
                topic=f"{subject} {i}",
                summary=text,
                keywords=[subject],
                search_text=f"{path}\n{subject}\n{text}",
                topic_embedding=vector.tolist(),
                version="1.0",
                inhalt_hash=f"{i:064d}",
                block_map=[
                    {
                        "kind": "section",
                        "heading": f"{subject} {i}",
                        "level": 1,
                        "line_start": 1,
                        "line_end": 6,
                        "ordinal": 1,
                    },
                    {
                        "kind": "section",
                        "heading": "AKTUELL",
                        "level": 2,
                        "line_start": 5,
                        "line_end": 7,
                        "ordinal": 2,
                    },
                ],
            )  # fmt: skip
        )
    KnowledgeEntry.objects.bulk_create(rows, batch_size=1000)
    KnowledgeEntry.objects.filter(user=user).update(
        search_vector=SearchVector(F("search_text"), config="german"),
        search_vector_simple=SearchVector(F("search_text"), config="simple"),
    )
    return [f"Was weißt du über {s.split(':')[0]}, das {s.split(': ')[1][:-1]}?"
            for _, s in sentences(random.Random(99), QUERIES)]  # fmt: skip


def retrieval(user: object, character: object) -> list[str]:
    lines = [
        "| library rows (one pair) | turns | p50 ms | p95 ms | mean hits |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in SCALES:
        reset_pair(user, character)
        queries = fill_library(user, character, n, random.Random(n))
        vectors = embed(queries)  # the enricher's one turn vector, computed before the source
        knowledge_context.search(  # warm-up: connection, plans, file cache
            context.SourceQuery(user=user, character=character, text=queries[0],
                                query_vector=vectors[0])
        )  # fmt: skip
        times, hits = [], []
        for text, vector in zip(queries, vectors, strict=True):
            t0 = time.perf_counter()
            found = knowledge_context.search(
                context.SourceQuery(user=user, character=character, text=text,
                                    query_vector=vector)
            )  # fmt: skip
            times.append((time.perf_counter() - t0) * 1000)
            hits.append(len(found.items))
        lines.append(
            f"| {n:,} | {len(queries)} | {pct(times, 50):.1f} | {pct(times, 95):.1f} | "
            f"{statistics.mean(hits):.1f} |"
        )
        print(lines[-1], flush=True)
    return lines


def return_path(user: object, character: object) -> list[str]:
    reset_pair(user, character)
    make_corpus(user, character)
    session = Session.objects.create(user=user, character=character)
    embed_one("Aufwärmen")  # the model is loaded once, not inside the first measurement
    times: list[float] = []
    outcomes: dict[str, int] = {}
    for text in MEMORIES:
        turn = Turn.objects.create(session=session, role=Turn.Role.USER, text=text)
        memory = MemoryEntry.objects.create(
            user=user, character=character, session=session, source_turn=turn,
            kind=MemoryEntry.Kind.LONG, text=text, salience=0.8,
            promoted_at=turn.created_at,
        )  # fmt: skip
        t0 = time.perf_counter()
        result = rueckweg_for_memory(memory_entry_id=memory.pk)
        times.append((time.perf_counter() - t0) * 1000)
        outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
    said = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
    return [
        "",
        "| return path, offline | memories | p50 ms | p95 ms | outcomes |",
        "|---|---:|---:|---:|---|",
        f"| per memory (embedding, 8 candidates, planner, incorporation) | {len(times)} | "
        f"{pct(times, 50):.1f} | {pct(times, 95):.1f} | {said} |",
    ]


def main() -> None:
    user, _ = get_user_model().objects.get_or_create(username="bench-knowledge")
    character = character_default()
    try:
        lines = [
            "### Knowledge library",
            "",
            *retrieval(user, character),
            *return_path(user, character),
        ]
        reset_pair(user, character)
    finally:
        shutil.rmtree(ZONE, ignore_errors=True)
    scales = ", ".join(f"{n:,}" for n in SCALES)
    lines += [
        "",
        f"Library retrieval per turn through the [EIGENES WISSEN] context source at {scales} "
        "rows of one pair, the turn vector given (no second embedding); the return path on the "
        "offline backend with its own embedding of the raw wording.",
    ]
    _django.write_result("knowledge", "\n".join(lines))


if __name__ == "__main__":
    main()
