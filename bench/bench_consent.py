"""Throughput of the consent reader: ``python bench/bench_consent.py [seconds]``.

Plain script, no Django: reads a mixed list of answers (consents, refusals, hesitations,
signs, corrections, long texts) for about two seconds and prints answers/s, µs/answer and
how many of the answers consent.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from conversation.consent import read_answer  # noqa: E402  (needs the path above)

ANSWERS: list[str] = [
    # consent
    "ja",
    "Ja, mach das",
    "ok",
    "gerne",
    "das ist ok",
    "es passt",
    "ja bitte",
    "auf jeden Fall",
    "na klar",
    "ja \U0001f44d",
    "Ja\u2026",
    "ja \u2013 gerne",
    "ich bin einverstanden",
    # refusal
    "nein",
    "ne, lass mal",
    "ja, aber lieber nicht",
    "stopp",
    "ja, vergiss es",
    # unclear: words, signs, word order
    "ja, aber erst morgen",
    "Sekündchen, bitte",
    "wait, ok",
    "Wie bitte?",
    "ist das ok",
    "ist (das) ok",
    "ja \U0001f914",
    "ja\u037e",
    "na ja",
    "die erste",
    "2",
    # correction
    "ja, aber sag 'Boss' statt 'Chef'",
    "ok, aber nenn es \u201eHerr Doktor\u201c",
    # long
    "ja, das ist ok, aber bitte erst nach dem Mittagessen und nur wenn es nicht stört",
    "ja " * 40,
]


def _run(duration_s: float) -> tuple[int, float, Counter[str]]:
    outcomes: Counter[str] = Counter(read_answer(text).outcome for text in ANSWERS)
    done = 0
    start = time.perf_counter()
    deadline = start + duration_s
    while time.perf_counter() < deadline:
        for text in ANSWERS:
            read_answer(text)
        done += len(ANSWERS)
    return done, time.perf_counter() - start, outcomes


def main(argv: list[str]) -> int:
    duration_s = float(argv[1]) if len(argv) > 1 else 2.0
    done, elapsed_s, outcomes = _run(duration_s)
    rate = done / elapsed_s
    rows = [
        ("distinct answers", f"{len(ANSWERS)}"),
        ("consent / refusal / unclear", "{consent} / {refusal} / {unclear}".format(**outcomes)),
        ("answers read", f"{done}"),
        ("seconds", f"{elapsed_s:.2f}"),
        ("answers/s", f"{rate:,.0f}"),
        ("µs/answer", f"{1e6 / rate:.2f}"),
    ]
    width = max(len(name) for name, _ in rows)
    from bench._django import provenance  # no Django needed: git, date and machine

    print("read_answer benchmark")
    print(f"  {provenance()}")
    for name, value in rows:
        print(f"  {name:<{width}}  {value:>12}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
