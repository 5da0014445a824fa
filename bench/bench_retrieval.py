"""Retrieval per turn: DB part (both channels + fusion) at 1k / 10k / 100k index rows over many
pairs, the turn-text embedding shown apart, recall of the filter-first plan vs an exact scan
(and of the naive HNSW query), and recall@3 / nDCG@3 of dense, lexical and fused on the labelled
German set (bench/retrieval_set.json over bench/corpus/).

Run: .venv/bin/python bench/bench_retrieval.py
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import _django  # noqa: E402

_django.setup()

from django.db import connection  # noqa: E402

from conversation.models import Character  # noqa: E402
from files.management.commands.calibrate_floor import measure  # noqa: E402
from files.models import FileRoot, IndexEntry, RetrievalCalibration  # noqa: E402
from files.search import embedding_model_label, hybrid_search  # noqa: E402
from files.tests.corpus import index_root, load_directory  # noqa: E402
from novaberg.embeddings import embed, embed_one  # noqa: E402
from tests.factories import UserFactory  # noqa: E402

BENCH = Path(__file__).resolve().parent
ROWS_PER_ROOT = 200
SCALES = [1_000, 10_000, 100_000]


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def ndcg3(ranked: list[str], relevant: list[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, p in enumerate(ranked[:3]) if p in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(3, len(relevant))))
    return dcg / ideal if ideal else 0.0


def quality(user: Any, nova: Character, labelled: list[dict[str, Any]], vecs: list[Any]) -> str:
    rows = []
    variants = [
        ("dicht", ("dicht",), 1.0),
        ("lexikalisch", ("lexikalisch",), 1.0),
        ("fusion (w_lex 1.0)", ("dicht", "lexikalisch"), 1.0),
        ("fusion (w_lex 0.5)", ("dicht", "lexikalisch"), 0.5),
    ]
    for name, channels, weight in variants:
        recalls, ndcgs, false_hits = [], [], 0
        for q, vec in zip(labelled, vecs, strict=True):
            hits = hybrid_search(
                user=user,
                character=nova,
                query_vector=vec,
                text=q["q"],
                channels=channels,
                lexical_weight=weight,
            ).hits
            ranked = [h.rel_path for h in hits]
            if q["relevant"]:
                recalls.append(len(set(ranked[:3]) & set(q["relevant"])) / len(q["relevant"]))
                ndcgs.append(ndcg3(ranked, q["relevant"]))
            elif ranked:
                false_hits += 1
        n_none = sum(1 for q in labelled if not q["relevant"])
        rows.append(
            f"| {name} | {statistics.mean(recalls):.3f} | {statistics.mean(ndcgs):.3f} | "
            f"{false_hits} / {n_none} |"
        )
    return (
        "| kanal | recall@3 | nDCG@3 | Fragen ohne Treffer, die trotzdem etwas bekamen |\n"
        "|---|---|---|---|\n" + "\n".join(rows)
    )


def fill(target: int, nova: Character, start_n: int, vocab: list[str]) -> None:
    """Bulk-insert synthetic rows (random vectors, random keyword bags) over many pairs."""
    need = target - IndexEntry.objects.count()
    if need <= 0:
        return
    roots = []
    for n in range(start_n, start_n + math.ceil(need / ROWS_PER_ROOT)):
        owner = UserFactory(username=f"bench{n}")
        roots.append(
            FileRoot.objects.create(
                user=owner, character=nova, path=f"/srv/b/{n}", eigentum="nutzer"
            )
        )
    with connection.cursor() as cur:
        cur.execute("DROP INDEX IF EXISTS indexentry_topic_hnsw")
        for i, root in enumerate(roots):
            count = min(ROWS_PER_ROOT, need - i * ROWS_PER_ROOT)
            cur.execute(
                """
                INSERT INTO files_indexentry (root_id, rel_path, format, size, inhalt_hash, topic,
                  summary, keywords, line_count, search_text, topic_embedding, block_map,
                  archived, state, first_seen_at, last_seen_at, last_error)
                SELECT %(root)s, 'd' || g || '.md', 'md', 1000, md5(g::text), 'Notiz ' || g, '',
                  kw, 20, array_to_string(kw, ' '),
                  (SELECT array_agg(random() - 0.5 + s * 0 + g * 0)
                   FROM generate_series(1, 384) s)::vector,
                  '[]', false, 'vorhanden', now(), now(), ''
                FROM generate_series(1, %(count)s) g,
                  LATERAL (SELECT array_agg(w) AS kw FROM (
                    SELECT (%(vocab)s::text[])[1 + floor(random() * %(nv)s + g * 0)::int] AS w
                    FROM generate_series(1, 6)) x) k
                """,
                {"root": root.id, "count": count, "vocab": vocab, "nv": len(vocab)},
            )
        cur.execute(
            "UPDATE files_indexentry SET search_vector = to_tsvector('german', search_text), "
            "search_vector_simple = to_tsvector('simple', search_text) WHERE search_vector IS NULL"
        )
        cur.execute("SET maintenance_work_mem = '512MB'")
        cur.execute(
            "CREATE INDEX indexentry_topic_hnsw ON files_indexentry USING hnsw "
            "(topic_embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        cur.execute("ANALYZE files_indexentry")


def naive_hnsw_recall(root_ids: list[int], vecs: list[Any], exact: list[list[int]]) -> float:
    got = []
    with connection.cursor() as cur:
        cur.execute("SET hnsw.ef_search = 40")
        for vec, want in zip(vecs, exact, strict=True):
            lit = "[" + ",".join(f"{v:.7g}" for v in vec) + "]"
            cur.execute(
                "SELECT id FROM files_indexentry WHERE root_id = ANY(%s) "
                "ORDER BY topic_embedding <=> %s::vector LIMIT 3",
                [root_ids, lit],
            )
            ids = [r[0] for r in cur.fetchall()]
            got.append(len(set(ids) & set(want)) / max(1, len(want)))
        cur.execute("RESET hnsw.ef_search")
    return statistics.mean(got)


def main() -> None:
    t0 = time.perf_counter()
    FileRoot.objects.all().delete()
    RetrievalCalibration.objects.all().delete()
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username__startswith="bench").delete()
    nova = Character.objects.get(name="Nova")
    user = UserFactory(username="bench-anna")
    root = FileRoot.objects.create(
        user=user, character=nova, path=str((BENCH / "corpus").resolve()), eigentum="nutzer"
    )
    corpus = load_directory(BENCH / "corpus")
    index_root(root, corpus)
    calib = measure(BENCH / "retrieval_set.json", BENCH / "corpus")
    RetrievalCalibration.objects.create(
        embedding_model=embedding_model_label(),
        dense_floor=calib["floor"],
        note="bench",
        distributions={"relative_margin": calib["relative_margin"]},
    )
    labelled = json.loads((BENCH / "retrieval_set.json").read_text())["queries"]
    embed_ms = []
    embed_one("Aufwärmen")
    for q in labelled:
        s = time.perf_counter()
        embed_one(q["q"])
        embed_ms.append((time.perf_counter() - s) * 1000)
    vecs = embed([q["q"] for q in labelled])
    quality_table = quality(user, nova, labelled, vecs)
    print(quality_table)
    vocab = sorted({k for e in IndexEntry.objects.all() for k in e.keywords}) + [
        f"wort{i}" for i in range(300)
    ]
    rows = []
    for n, scale in enumerate(SCALES):
        fill(scale, nova, n * 1000, vocab)
        db_ms = []
        for _ in range(2):
            for q, vec in zip(labelled, vecs, strict=True):
                s = time.perf_counter()
                hybrid_search(user=user, character=nova, query_vector=vec, text=q["q"])
                db_ms.append((time.perf_counter() - s) * 1000)
        exact = []
        with connection.cursor() as cur:
            for vec in vecs:
                lit = "[" + ",".join(f"{v:.7g}" for v in vec) + "]"
                cur.execute(
                    "WITH c AS MATERIALIZED (SELECT id, topic_embedding <=> %s::vector d "
                    "FROM files_indexentry WHERE root_id = %s) SELECT id FROM c ORDER BY d LIMIT 3",
                    [lit, root.id],
                )
                exact.append([r[0] for r in cur.fetchall()])
        naive = naive_hnsw_recall([root.id], vecs, exact)
        rows.append(
            f"| {IndexEntry.objects.count():,} | {FileRoot.objects.count()} | "
            f"{pct(db_ms, 50):.2f} | {pct(db_ms, 95):.2f} | 1.000 | {naive:.3f} |"
        )
        print(rows[-1], f"({time.perf_counter() - t0:.0f} s)")
    md = (
        "## Retrieval per turn (files, issue 5)\n\n"
        f"Machine: {_django.machine()}. Pair under test: {len(corpus)} real German files; the "
        "other rows are synthetic (random vectors, random keyword bags), "
        f"{ROWS_PER_ROOT} rows per root, one root per person, HNSW index present.\n\n"
        "| index rows | roots | DB part p50 ms (both channels + fusion) | p95 ms | "
        "recall@3 filter-first vs exact | recall@3 naive HNSW (ef_search 40) |\n"
        "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        f"Embedding of the turn text (apart, all-MiniLM-L6-v2, CPU): p50 "
        f"{pct(embed_ms, 50):.1f} ms, p95 {pct(embed_ms, 95):.1f} ms.\n\n"
        f"Labelled set: {len(labelled)} German questions "
        f"({sum(1 for q in labelled if not q['relevant'])} without a relevant file), "
        f"{len(corpus)} files; dense floor {calib['floor']:.2f} calibrated on the same set "
        f"(relative margin {calib['relative_margin']:.3f}).\n\n" + quality_table + "\n"
    )
    _django.write_result("retrieval", md)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
