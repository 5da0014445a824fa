"""Watcher throughput: ``python bench/bench_watcher.py [rescan_files] [index_files]``.

1. Rescan of N unchanged files (default 10,000): the fast path (size, mtime_ns, ctime_ns,
   inode) next to the full-hash verification run, files/s each. The index rows are seeded with
   the real hash and fingerprint of every file (what a completed run leaves), so the rescan
   measures the walk + decision, not the first enrichment.
2. First indexing with the offline enricher (default 100 files): files/s, and the embedding
   sentences/s inside it (topic text + section blocks, batched per file).
Files are generated in a temp dir; the database is ``novaberg_bench``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import _django  # noqa: E402

TEXT = (
    "# Notiz {i}\n\nWanderung {i} führt über den Grat zur Hütte; Proviant und Wasser "
    "einpacken.\n\n## Ausrüstung\n\nSchuhe, Jacke, Karte {i}.\n"
)


def make_files(base: Path, n: int) -> None:
    for i in range(n):
        sub = base / f"d{i // 500:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"notiz{i:05d}.md").write_text(TEXT.format(i=i), encoding="utf-8")


def main() -> None:
    _django.setup()
    from django.contrib.auth import get_user_model

    from conversation.services import character_default
    from files.models import FileRoot, IndexEntry
    from files.watcher import index_root_run, scan
    from files.watcher import run as run_module

    rescan_n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    index_n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    user, _ = get_user_model().objects.get_or_create(username="bench-watcher")
    nova = character_default()
    FileRoot.objects.filter(user=user).delete()

    with tempfile.TemporaryDirectory() as tmp:
        # -- 1. rescan of unchanged files -----------------------------------------------------
        rescan_dir = Path(tmp) / "rescan"
        make_files(rescan_dir, rescan_n)
        root = FileRoot.objects.create(
            user=user, character=nova, path=str(rescan_dir), eigentum="nutzer", state="aktiv"
        )
        rows = []
        for item in scan.walk(rescan_dir, max_bytes=10**9):
            assert isinstance(item, scan.Found)
            digest = hashlib.sha256(Path(item.path).read_bytes()).hexdigest()
            rows.append(
                IndexEntry(
                    root=root,
                    rel_path=item.rel_path,
                    format=item.format,
                    size=item.size,
                    mtime_ns=item.mtime_ns,
                    ctime_ns=item.ctime_ns,
                    inode=item.inode,
                    inhalt_hash=digest,
                    indexed_at=None,
                )
            )
        IndexEntry.objects.bulk_create(rows, batch_size=2000)
        timings = {}
        for label, full in (("fast", False), ("full", True)):
            started = time.perf_counter()
            report = index_root_run(root_id=root.pk, full_hash=full)
            seconds = time.perf_counter() - started
            assert report.counts["unchanged"] == rescan_n, report.counts
            timings[label] = (seconds, rescan_n / seconds)

        # -- 2. first indexing with the offline enricher ---------------------------------------
        from novaberg.embeddings import embed as real_embed
        from novaberg.embeddings import warm_up

        warm_up()  # model load is not indexing throughput
        index_dir = Path(tmp) / "index"
        make_files(index_dir, index_n)
        root2 = FileRoot.objects.create(
            user=user, character=nova, path=str(index_dir), eigentum="nutzer", state="aktiv"
        )
        embedded = {"texts": 0, "seconds": 0.0}

        def counting_embed(texts: list[str]) -> list[list[float]]:
            t0 = time.perf_counter()
            out = real_embed(texts)
            embedded["seconds"] += time.perf_counter() - t0
            embedded["texts"] += len(texts)
            return out

        run_module.embed = counting_embed  # type: ignore[assignment]
        started = time.perf_counter()
        report = index_root_run(root_id=root2.pk)
        index_seconds = time.perf_counter() - started
        assert report.counts["new"] == index_n, report.counts
    FileRoot.objects.filter(user=user).delete()

    fast_s, fast_rate = timings["fast"]
    full_s, full_rate = timings["full"]
    sent_rate = embedded["texts"] / embedded["seconds"] if embedded["seconds"] else 0.0
    table = "\n".join(
        [
            "| measurement | files | seconds | rate |",
            "|---|---:|---:|---:|",
            f"| rescan, unchanged, fast path (size, mtime, ctime, inode) | {rescan_n} | "
            f"{fast_s:.2f} | {fast_rate:,.0f} files/s |",
            f"| rescan, unchanged, full-hash verification (sha256 of every file) | {rescan_n} | "
            f"{full_s:.2f} | {full_rate:,.0f} files/s |",
            f"| first indexing, offline enricher + embeddings | {index_n} | {index_seconds:.2f} | "
            f"{index_n / index_seconds:,.1f} files/s |",
            f"| embedding inside first indexing (batched per file) | {embedded['texts']} "
            f"sentences | {embedded['seconds']:.2f} | {sent_rate:,.1f} sentences/s |",
            "",
            f"Fast-path target ≥ 10,000 files/s: {'met' if fast_rate >= 10_000 else 'NOT met'}.",
        ]
    )
    print(table)
    _django.write_result("watcher", table)


if __name__ == "__main__":
    os.environ.setdefault("NOVABERG_LOG_LEVEL", "WARNING")
    main()
