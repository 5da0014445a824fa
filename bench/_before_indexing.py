"""First indexing as the code did it before the scaling work: run by ``bench_watcher.py`` in a
child process on that commit's own tree (``git archive``), never imported by the product.

``python bench/_before_indexing.py CODE_DIR`` puts CODE_DIR (the old tree) first on the path,
so every module of the product it imports is the old code's (this folder follows it, for the
standard-library helper ``_tally``); the database is the one named by
``DATABASE_URL`` + ``NOVABERG_DATABASE_NAME`` (a database of its own, migrated here by the old
code's migrations). Then it reads folder paths from stdin, one per line, indexes each as a
new root with the old ``index_root_run`` and answers one JSON line per folder: seconds, the
texts embedded and the seconds spent embedding (counted through the old indexing service's
``embed``), outcome and new-file count. The embedding model is loaded before the first clock
starts, as in the parent.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    code_dir = Path(sys.argv[1]).resolve()
    here = str(Path(__file__).resolve().parent)
    # The old tree first, then this folder (bench helpers only, no package of the product).
    sys.path[:] = [str(code_dir), here] + [p for p in sys.path if p not in ("", here)]
    os.chdir(code_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novaberg.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)

    from _tally import EmbedTally
    from django.contrib.auth import get_user_model

    import files.indexing as indexing
    from conversation.services import character_default
    from files.models import FileRoot
    from files.watcher.run import index_root_run
    from novaberg.embeddings import warm_up

    assert Path(indexing.__file__).resolve().is_relative_to(code_dir), indexing.__file__
    tally = EmbedTally(indexing.embed)
    indexing.embed = tally  # type: ignore[attr-defined]
    user, _ = get_user_model().objects.get_or_create(username="bench-watcher-before")
    nova = character_default()
    FileRoot.objects.filter(user=user).delete()
    warm_up()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        folder = line.strip()
        if not folder:
            continue
        root = FileRoot.objects.create(
            user=user, character=nova, path=folder, eigentum="nutzer", state="aktiv"
        )
        tally.reset()
        started = time.perf_counter()
        report = index_root_run(root_id=root.pk)
        seconds = time.perf_counter() - started
        answer = {
            "seconds": seconds,
            "texts": tally.texts,
            "embed_seconds": tally.seconds,
            "outcome": report.outcome,
            "new": report.counts.get("new", 0),
        }
        FileRoot.objects.filter(pk=root.pk).delete()
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
