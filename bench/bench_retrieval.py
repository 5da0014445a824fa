"""Retrieval per turn, every figure computed on the product's own code path.

1. Quality on the labelled German set (bench/retrieval_set.json over bench/corpus/): the corpus
   folder is indexed by the product's watcher (``files.watcher.run.index_root_run``, the same
   run a released root gets), the set is split deterministically
   (``files.calibration.split_labelled``), the dense floor is calibrated on the calibration
   split and recall@3 / nDCG@3 are scored on the other split through ``hybrid_search``.
2. Both dense plans at scale: a pair with few rows (exact scan after filtering) and a pair with
   more rows than ``settings.FILES_EXACT_SCAN_MAX_ROWS`` (HNSW), each with 10,000 and 100,000
   rows in the table. Rows are clustered around real embeddings of generated German sentences
   (packaged model), queries are embeddings of held-out sentences. Per row: the plan the search
   reported (``dense_plan`` of its outcome log), the plan PostgreSQL chose for that very
   statement (EXPLAIN), recall@3 of the search's top 3 against an exact scan, p50/p95.

Run: ``.venv/bin/python bench/bench_retrieval.py``. ``NOVABERG_BENCH_SCALES=10000`` (comma list)
measures fewer scales, e.g. for a quick check; the README's table uses the defaults.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import os
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import _django  # noqa: E402

_django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from conversation.services import character_default  # noqa: E402
from files import calibration  # noqa: E402
from files.models import FileRoot, IndexEntry  # noqa: E402
from files.search import Floor, active_floor, hybrid_search  # noqa: E402
from novaberg.embeddings import embed, embed_one  # noqa: E402

BENCH = Path(__file__).resolve().parent
SET = BENCH / "retrieval_set.json"
CORPUS = BENCH / "corpus"
SCALES = [
    int(s) for s in os.environ.get("NOVABERG_BENCH_SCALES", "10000,100000").split(",") if s.strip()
]
SMALL_PAIR_ROWS = 300
LARGE_PAIR_ROWS = settings.FILES_EXACT_SCAN_MAX_ROWS + 1000
FILL_ROWS_PER_ROOT = 1000
N_BASE = 400
N_QUERIES = 40
SEED = 9
HNSW_INDEX = "indexentry_topic_hnsw"
SUPPORTS_BLOCKS = "blocks" in inspect.signature(hybrid_search).parameters


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def ndcg3(ranked: list[str], relevant: tuple[str, ...]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, p in enumerate(ranked[:3]) if p in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(3, len(relevant))))
    return dcg / ideal if ideal else 0.0


# --- 1. quality on the labelled set ----------------------------------------------------------


def shipped_floor() -> Floor:
    """The floor the product ships (the data migration's row), restored in the bench database
    in case an earlier run replaced it."""
    migration = importlib.import_module("files.migrations.0003_calibration_minilm")
    from django.apps import apps

    migration.store(apps, None)
    return active_floor()


def with_floor(base: Floor, **changes: Any) -> Floor:
    fields = {f.name for f in dataclasses.fields(base)}
    return dataclasses.replace(base, **{k: v for k, v in changes.items() if k in fields})


def score(
    user: Any,
    nova: Any,
    queries: list[calibration.LabelledQuery],
    vecs: list[list[float]],
    *,
    floor: Floor,
    channels: tuple[str, ...],
    weight: float,
    blocks: bool = True,
) -> tuple[float, float, int, int]:
    recalls, ndcgs, false_hits = [], [], 0
    extra = {"blocks": blocks} if SUPPORTS_BLOCKS else {}
    for q, vec in zip(queries, vecs, strict=True):
        hits = hybrid_search(
            user=user,
            character=nova,
            query_vector=vec,
            text=q.q,
            channels=channels,
            lexical_weight=weight,
            floor=floor,
            **extra,
        ).hits
        ranked = [h.rel_path for h in hits]
        if q.relevant:
            recalls.append(len(set(ranked[:3]) & set(q.relevant)) / len(q.relevant))
            ndcgs.append(ndcg3(ranked, q.relevant))
        elif ranked:
            false_hits += 1
    n_none = sum(1 for q in queries if not q.relevant)
    return statistics.mean(recalls), statistics.mean(ndcgs), false_hits, n_none


def quality() -> tuple[str, list[float]]:
    labelled = calibration.load_labelled(SET)
    split = calibration.split_labelled(labelled)
    shipped = shipped_floor()
    with calibration.folder_indexed(CORPUS, username="bench-anna") as idx:
        files = IndexEntry.objects.filter(root=idx.root, state=IndexEntry.State.PRESENT).count()
        cal_vecs = embed([q.q for q in split.calibration])
        score_vecs = embed([q.q for q in split.scoring])
        calib = calibration.calibrate(
            split.calibration,
            calibration.pair_scores(user=idx.user, character=idx.character, vectors=cal_vecs),
        )
        block_note = ""
        block_changes: dict[str, float] = {}
        if SUPPORTS_BLOCKS:
            try:
                block = calibration.calibrate(
                    split.calibration,
                    calibration.pair_scores(
                        user=idx.user, character=idx.character, vectors=cal_vecs, blocks=True
                    ),
                )
                block_changes = {"block_value": block.floor}
                block_note = (
                    f" Block floor {block.floor:.2f} from the same split (shipped: "
                    f"{getattr(shipped, 'block_value', float('nan')):.2f})."
                )
            except calibration.CalibrationError as exc:
                block_note = f" Block floor not measured ({exc.step}): {exc.message}"
        measured = with_floor(
            shipped,
            value=calib.floor,
            margin=calib.relative_margin,
            source="bench: Kalibrierungsteil",
            **block_changes,
        )
        variants: list[tuple[str, Floor, tuple[str, ...], float, bool]] = [
            ("dense", measured, ("dicht",), 1.0, True),
            ("lexical", measured, ("lexikalisch",), 1.0, True),
            ("fusion (w_lex 1.0)", measured, ("dicht", "lexikalisch"), 1.0, True),
            ("fusion (w_lex 0.5)", measured, ("dicht", "lexikalisch"), 0.5, True),
        ]
        if SUPPORTS_BLOCKS:
            variants.append(
                (
                    "fusion, file rows only (before block rows)",
                    measured,
                    ("dicht", "lexikalisch"),
                    1.0,
                    False,
                )
            )
        variants.append(
            (
                f"fusion, shipped floor {shipped.value:.2f}",
                shipped,
                ("dicht", "lexikalisch"),
                1.0,
                True,
            )
        )
        rows = []
        for name, floor, channels, weight, blocks in variants:
            r, n, fh, nn = score(
                idx.user,
                idx.character,
                split.scoring,
                score_vecs,
                floor=floor,
                channels=channels,
                weight=weight,
                blocks=blocks,
            )
            r_cal, _, fh_cal, nn_cal = score(
                idx.user,
                idx.character,
                split.calibration,
                cal_vecs,
                floor=floor,
                channels=channels,
                weight=weight,
                blocks=blocks,
            )
            rows.append(
                f"| {name} | {r:.3f} | {n:.3f} | {fh} / {nn} | {r_cal:.3f} | {fh_cal} / {nn_cal} |"
            )
            print(rows[-1], flush=True)
    embed_one("Aufwärmen")
    embed_ms = []
    for q in labelled:
        s = time.perf_counter()
        embed_one(q.q)
        embed_ms.append((time.perf_counter() - s) * 1000)
    differs = (
        f"differs from the shipped floor {shipped.value:.2f} (migration 0003 not changed)"
        if abs(calib.floor - shipped.value) > 1e-9
        else f"equals the shipped floor {shipped.value:.2f}"
    )
    # The code path as named in calibrate_floor's German output, its gloss in English.
    index_path = calibration.index_path().split(" (")[0] + " (watcher, offline enrichment)"
    md = (
        f"Labelled set: {len(labelled)} German questions "
        f"({sum(1 for q in labelled if not q.relevant)} without a relevant file) over "
        f"{files} files of bench/corpus. Index path: `{index_path}` on the real "
        "folder. Split: "
        f"{split_text(split)}.\n\n"
        f"Dense floor calibrated on the calibration split: **{calib.floor:.2f}** (best "
        f"unrelated question {max(calib.unrelated_best):.3f}; keeps {calib.relevant_kept} of "
        f"{len(calib.relevant)} relevant pairs dense; relative margin "
        f"{calib.relative_margin:.3f}); it {differs}.{block_note} Scored on the scoring split "
        "with that floor, the last row with the shipped one:\n\n"
        "| channel | recall@3 | nDCG@3 | questions without a relevant file that still got a hit | "
        "recall@3 calibration split (for comparison) | there: without a file, still a hit |\n"
        "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    return md, embed_ms


# --- 2. both dense plans at scale --------------------------------------------------------------

TOPICS: dict[str, tuple[list[str], list[str], list[str]]] = {
    "Garten": (
        ["die Tomaten", "die Gurken", "die Rosen", "die Erdbeeren", "den Kompost", "die Kräuter"],
        ["gießen", "düngen", "pflanzen", "zurückschneiden", "ernten"],
        ["im Hochbeet", "am Zaun", "im Gewächshaus", "auf dem Balkon"],
    ),
    "Küche": (
        ["das Sauerteigbrot", "die Linsensuppe", "den Apfelkuchen", "das Gemüsecurry"],
        ["backen", "kochen", "vorbereiten", "einfrieren", "abschmecken"],
        ["am Sonntag", "für die Gäste", "im Ofen", "in der großen Pfanne"],
    ),
    "Reisen": (
        ["die Zugtickets", "das Hotel", "die Fähre", "den Mietwagen", "die Wanderkarte"],
        ["buchen", "stornieren", "vergleichen", "bezahlen", "ausdrucken"],
        ["für Norwegen", "für den Sommerurlaub", "für die Alpen", "für Lissabon"],
    ),
    "Technik": (
        ["den Router", "den Laptop", "die Datenbank", "den Drucker", "die Festplatte"],
        ["sichern", "neu starten", "aktualisieren", "einrichten", "reparieren"],
        ["im Arbeitszimmer", "über das VPN", "jede Nacht", "nach dem Update"],
    ),
    "Gesundheit": (
        ["den Zahnarzttermin", "die Laufschuhe", "den Blutdruck", "die Impfung"],
        ["vereinbaren", "messen", "kaufen", "auffrischen", "verschieben"],
        ["im März", "nach der Arbeit", "beim Hausarzt", "vor dem Marathon"],
    ),
    "Finanzen": (
        ["die Steuererklärung", "die Versicherung", "die Nebenkosten", "den Sparplan"],
        ["einreichen", "kündigen", "prüfen", "überweisen", "anpassen"],
        ["bis Ende Juli", "für das Finanzamt", "jeden Monat", "beim Vermieter"],
    ),
    "Musik": (
        ["die Gitarre", "die Akkorde", "das Notenheft", "den Verstärker", "die Saiten"],
        ["stimmen", "üben", "wechseln", "mitnehmen", "aufnehmen"],
        ["vor der Probe", "mit der Band", "am Abend", "im Proberaum"],
    ),
    "Töpfern": (
        ["die Glasur", "den Brennofen", "die Drehscheibe", "die Schale", "den Ton"],
        ["brennen", "zentrieren", "glasieren", "trocknen lassen", "abdrehen"],
        ["bei 1240 Grad", "im Kurs", "über Nacht", "in der Werkstatt"],
    ),
    "Auto": (
        ["die Winterreifen", "den Ölwechsel", "den TÜV-Termin", "die Scheibenwischer"],
        ["wechseln", "erledigen", "ausmachen", "tauschen", "prüfen lassen"],
        ["in der Werkstatt", "vor dem Winter", "im Oktober", "an der Tankstelle"],
    ),
    "Umzug": (
        ["die Umzugskisten", "die Wohnungsübergabe", "die Ummeldung", "den Internetanschluss"],
        ["organisieren", "beantragen", "planen", "anmelden", "erledigen"],
        ["beim Bürgeramt", "im Juni", "mit dem Vermieter", "zwei Wochen vorher"],
    ),
}
TEMPLATES = [
    "{topic}: {obj} {place} {verb}.",
    "Ich muss {obj} {place} {verb}.",
    "Nicht vergessen, {obj} {place} zu {verb}.",
    "Wann sollte ich {obj} {place} {verb}?",
    "Notiz zu {topic}: {obj} {place} {verb}, sonst wird es knapp.",
]


def sentences(n: int) -> list[tuple[str, str]]:
    """``n`` distinct generated German sentences (topic, sentence), deterministic."""
    rng = random.Random(SEED)
    out: dict[str, str] = {}
    topics = sorted(TOPICS)
    while len(out) < n:
        topic = rng.choice(topics)
        objs, verbs, places = TOPICS[topic]
        text = rng.choice(TEMPLATES).format(
            topic=topic, obj=rng.choice(objs), verb=rng.choice(verbs), place=rng.choice(places)
        )
        out.setdefault(text, topic)
    return [(topic, text) for text, topic in out.items()]


def keywords_of(topic: str, text: str) -> list[str]:
    words = re.findall(r"\b[A-ZÄÖÜ][\wäöüß-]{3,}\b", text)
    return list(dict.fromkeys([topic, *words]))[:8]


def _default_params() -> tuple[list[str], list[Any]]:
    """Every IndexEntry column the fill does not set, with its model default (so a column added
    later does not break the bench)."""
    known = {
        "id",
        "root_id",
        "rel_path",
        "format",
        "size",
        "inhalt_hash",
        "topic",
        "summary",
        "keywords",
        "line_count",
        "search_text",
        "topic_embedding",
        "state",
        "indexed_at",
    }
    cols, values = [], []
    for f in IndexEntry._meta.concrete_fields:
        if f.column in known:
            continue
        cols.append(f.column)
        values.append(f.get_db_prep_save(f.get_default(), connection))
    return cols, values


class Filler:
    """Rows clustered around real embeddings: row = normalise(base[c] + s · noise), noise
    Gaussian with unit expected norm, s in [0.35, 0.75] (cosine to the base about 0.8–0.94),
    written by binary COPY into a staging table and moved into the index in one INSERT."""

    def __init__(self, base_vecs: np.ndarray, base: list[tuple[str, str]]) -> None:
        import psycopg
        from pgvector.psycopg import register_vector

        self.base_vecs = base_vecs
        self.rng = np.random.default_rng(SEED)
        # A connection of its own: the binary vector adapters stay off Django's connection.
        params = {
            k: v
            for k, v in connection.get_connection_params().items()
            if k not in {"cursor_factory", "context", "prepare_threshold"}
        }
        self.conn = psycopg.connect(**params, autocommit=True)
        register_vector(self.conn)
        self.conn.execute("DROP TABLE IF EXISTS bench_sentence")
        self.conn.execute(
            "CREATE TABLE bench_sentence (c int PRIMARY KEY, topic text, body text, kw text[])"
        )
        self.conn.execute("DROP TABLE IF EXISTS bench_stage")
        self.conn.execute("CREATE UNLOGGED TABLE bench_stage (n int, c int, v vector)")
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO bench_sentence VALUES (%s, %s, %s, %s)",
                [
                    (c, topic, text, keywords_of(topic, text))
                    for c, (topic, text) in enumerate(base)
                ],
            )

    def add(self, root_id: int, n: int, start: int) -> None:
        clusters = self.rng.integers(0, len(self.base_vecs), size=n)
        dim = self.base_vecs.shape[1]
        noise = self.rng.standard_normal((n, dim)) / math.sqrt(dim)
        scale = self.rng.uniform(0.35, 0.75, size=(n, 1))
        vecs = self.base_vecs[clusters] + scale * noise
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        cols, values = _default_params()
        extra_cols = "".join(f", {c}" for c in cols)
        extra_vals = "".join(", %s" for _ in cols)
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute("TRUNCATE bench_stage")
            with cur.copy("COPY bench_stage (n, c, v) FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["int4", "int4", "vector"])
                for i in range(n):
                    copy.write_row((start + i, int(clusters[i]), vecs[i].astype(np.float32)))
            cur.execute(
                f"""
                INSERT INTO {IndexEntry._meta.db_table} (root_id, rel_path, format, size,
                  inhalt_hash, topic, summary, keywords, line_count, search_text,
                  topic_embedding, state, indexed_at{extra_cols})
                SELECT %s, 'notiz-' || s.n || '.md', 'md', 200, md5(s.n::text), b.topic,
                  b.body, b.kw, 3, b.topic || E'\\n' || b.body || ' ' || s.n, s.v, %s,
                  now(){extra_vals}
                FROM bench_stage s JOIN bench_sentence b ON b.c = s.c
                """,
                [root_id, IndexEntry.State.PRESENT.value, *values],
            )

    def close(self) -> None:
        self.conn.execute("DROP TABLE IF EXISTS bench_stage")
        self.conn.execute("DROP TABLE IF EXISTS bench_sentence")
        self.conn.close()


def make_pair(username: str, nova: Any) -> tuple[Any, FileRoot]:
    user = get_user_model().objects.create(username=username)
    root = FileRoot.objects.create(
        user=user, character=nova, path=f"/srv/bench/{username}", eigentum="nutzer", state="aktiv"
    )
    return user, root


def reset_bench_rows() -> None:
    """The scale part's rows go in bulk (a Django cascade would load 100k rows into Python)."""
    with connection.cursor() as cur:
        cur.execute(
            f"TRUNCATE {IndexEntry._meta.db_table}, {FileRoot._meta.db_table} RESTART IDENTITY "
            "CASCADE"
        )
    get_user_model().objects.filter(username__startswith="bench-r-").delete()


@contextmanager
def captured() -> Iterator[list[tuple[str, Any]]]:
    statements: list[tuple[str, Any]] = []

    def wrapper(execute: Callable[..., Any], sql: str, params: Any, many: bool, ctx: Any) -> Any:
        statements.append((sql, params))
        return execute(sql, params, many, ctx)

    with connection.execute_wrapper(wrapper):
        yield statements


def explain(statements: list[tuple[str, Any]]) -> str:
    """EXPLAIN of the search's own dense statement (with the settings it set before it)."""
    dense = [
        (sql, p)
        for sql, p in statements
        if "<=>" in sql
        and "ORDER BY" in sql
        and IndexEntry._meta.db_table in sql
        and "index_block" not in sql.lower()
        and "indexblock" not in sql.lower()
    ]
    if not dense:
        return "no dense statement found"
    sql, params = dense[0]
    with transaction.atomic(), connection.cursor() as cur:
        for s, p in statements:
            if "set_config('hnsw.ef_search'" in s:
                cur.execute(s, p)
        cur.execute("EXPLAIN " + sql, params)
        plan = "\n".join(r[0] for r in cur.fetchall())
    if HNSW_INDEX in plan:
        return "Index Scan on HNSW"
    if "Seq Scan" in plan:
        return "Seq Scan (exact)"
    m = re.search(r"(Bitmap Heap Scan|Index Scan|Index Only Scan)[^\n]*", plan)
    return f"{m.group(1)} without HNSW (exact)" if m else plan.splitlines()[0][:60]


def exact_top3(root_id: int, vec: list[float]) -> list[int]:
    lit = "[" + ",".join(f"{v:.7g}" for v in vec) + "]"
    with connection.cursor() as cur:
        cur.execute(
            f"WITH c AS MATERIALIZED (SELECT id, topic_embedding <=> %s::vector d "
            f"FROM {IndexEntry._meta.db_table} WHERE root_id = %s AND state = %s "
            "AND topic_embedding IS NOT NULL) SELECT id FROM c ORDER BY d, id LIMIT 3",
            [lit, root_id, IndexEntry.State.PRESENT.value],
        )
        return [r[0] for r in cur.fetchall()]


def measure_pair(
    user: Any, nova: Any, root: FileRoot, queries: list[tuple[str, list[float]]]
) -> dict[str, Any]:
    no_floor = with_floor(
        active_floor(), value=-2.0, margin=-2.0, source="bench: ohne Boden", block_value=-2.0
    )
    extra = {"blocks": False} if SUPPORTS_BLOCKS else {}
    plans: Counter[str] = Counter()
    recalls, dense_ms, full_ms = [], [], []
    verdict = ""
    for n, (text, vec) in enumerate(queries):
        with captured() as statements:
            s = time.perf_counter()
            out = hybrid_search(
                user=user,
                character=nova,
                query_vector=vec,
                text=text,
                channels=("dicht",),
                floor=no_floor,
                **extra,
            )
            dense_ms.append((time.perf_counter() - s) * 1000)
        plans[str(out.log.get("dense_plan"))] += 1
        if n == 0:
            verdict = explain(statements)
        want = exact_top3(root.pk, vec)
        got = [h.entry_id for h in out.hits[:3]]
        recalls.append(len(set(got) & set(want)) / max(1, len(want)))
        s = time.perf_counter()
        hybrid_search(user=user, character=nova, query_vector=vec, text=text)
        full_ms.append((time.perf_counter() - s) * 1000)
    return {
        "plans": ", ".join(f"{p} ×{c}" for p, c in plans.most_common()),
        "explain": verdict,
        "recall": statistics.mean(recalls),
        "dense": (pct(dense_ms, 50), pct(dense_ms, 95)),
        "full": (pct(full_ms, 50), pct(full_ms, 95)),
    }


def scale_part() -> tuple[str, list[str]]:
    t0 = time.perf_counter()
    reset_bench_rows()
    nova = character_default()
    gen = sentences(N_BASE + N_QUERIES)
    base, held_out = gen[:N_BASE], gen[N_BASE:]
    base_vecs = np.array(embed([t for _, t in base]), dtype=np.float64)
    query_vecs = embed([t for _, t in held_out])
    queries = [(t, v) for (_, t), v in zip(held_out, query_vecs, strict=True)]
    print(f"embedded {len(gen)} sentences ({time.perf_counter() - t0:.0f} s)", flush=True)
    filler = Filler(base_vecs, base)
    small_user, small_root = make_pair("bench-r-small", nova)
    large_user, large_root = make_pair("bench-r-large", nova)
    with connection.cursor() as cur:
        cur.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
    filler.add(small_root.pk, SMALL_PAIR_ROWS, 0)
    filler.add(large_root.pk, LARGE_PAIR_ROWS, 0)
    fill_users = 0
    rows: list[str] = []
    for scale in sorted(SCALES):
        with connection.cursor() as cur:
            cur.execute(f"SELECT count(*) FROM {IndexEntry._meta.db_table}")
            have = int(cur.fetchone()[0])
            cur.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
        need = scale - have
        while need > 0:
            count = min(FILL_ROWS_PER_ROOT, need)
            _, root = make_pair(f"bench-r-fill-{fill_users}", nova)
            filler.add(root.pk, count, 0)
            fill_users += 1
            need -= count
        with connection.cursor() as cur:
            cur.execute(
                f"UPDATE {IndexEntry._meta.db_table} SET "
                "search_vector = to_tsvector('german', search_text), "
                "search_vector_simple = to_tsvector('simple', search_text) "
                "WHERE search_vector IS NULL"
            )
            cur.execute("SET maintenance_work_mem = '512MB'")
            cur.execute(
                f"CREATE INDEX {HNSW_INDEX} ON {IndexEntry._meta.db_table} USING hnsw "
                "(topic_embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
            )
            cur.execute(f"ANALYZE {IndexEntry._meta.db_table}")
            cur.execute(f"SELECT count(*) FROM {IndexEntry._meta.db_table}")
            total = int(cur.fetchone()[0])
        print(f"{total:,} rows ready ({time.perf_counter() - t0:.0f} s)", flush=True)
        for label, user, root, n_rows in (
            ("few rows", small_user, small_root, SMALL_PAIR_ROWS),
            ("many rows", large_user, large_root, LARGE_PAIR_ROWS),
        ):
            m = measure_pair(user, nova, root, queries)
            rows.append(
                f"| {total:,} | {label} | {n_rows:,} | {m['plans']} | {m['explain']} | "
                f"{m['recall']:.3f} | {m['dense'][0]:.2f} | {m['dense'][1]:.2f} | "
                f"{m['full'][0]:.2f} | {m['full'][1]:.2f} |"
            )
            print(rows[-1], f"({time.perf_counter() - t0:.0f} s)", flush=True)
    filler.close()
    reset_bench_rows()
    md = (
        f"Both dense plans. Rows: {N_BASE} generated German sentences embedded with the packaged "
        "model, every row a neighbour of one of them (cosine about 0.8–0.94 to its sentence); "
        f"queries: {N_QUERIES} held-out sentences, embedded the same way. Pairs under test: "
        f"{SMALL_PAIR_ROWS} rows, and {LARGE_PAIR_ROWS:,} rows (switch point "
        f"`FILES_EXACT_SCAN_MAX_ROWS` = {settings.FILES_EXACT_SCAN_MAX_ROWS:,}); the other rows "
        f"belong to other people ({FILL_ROWS_PER_ROOT:,} per root). Plan: the `dense_plan` the "
        "search logged for each query; EXPLAIN: the plan PostgreSQL chose for the search's own "
        "dense statement. Recall@3: the search's top 3 (dense channel alone, no floor) against "
        "an exact scan of the pair. Dense p50/p95: that call; both channels: the full "
        "`hybrid_search` with the query text (floor on).\n\n"
        "| rows in table | pair | pair rows | plan (search log) | EXPLAIN | recall@3 vs exact | "
        "dense p50 ms | dense p95 ms | both channels + fusion p50 ms | p95 ms |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    return md, rows


def main() -> None:
    t0 = time.perf_counter()
    quality_md, embed_ms = quality()
    print(quality_md, flush=True)
    scale_md, _ = scale_part()
    md = (
        "### Retrieval per turn (files)\n\n"
        + scale_md
        + "\n"
        + f"Embedding of the turn text (on its own, `{calibration_model()}`, CPU): p50 "
        f"{pct(embed_ms, 50):.1f} ms, p95 {pct(embed_ms, 95):.1f} ms.\n\n" + quality_md
    )
    _django.write_result("retrieval", md)
    print(f"total {time.perf_counter() - t0:.0f} s")


def split_text(split: calibration.Split) -> str:
    """The split in English (``Split.describe`` is the German text of `calibrate_floor`)."""

    def count(qs: list[calibration.LabelledQuery]) -> str:
        none = sum(1 for q in qs if not q.relevant)
        return f"{len(qs)} questions ({none} without a relevant file)"

    return (
        f"calibration {count(split.calibration)}; scoring {count(split.scoring)} (stratified "
        "by with/without a relevant file, each stratum sorted by the question's sha256 and "
        "dealt alternately)"
    )


def calibration_model() -> str:
    from files.search import embedding_model_label

    return embedding_model_label()


if __name__ == "__main__":
    main()
