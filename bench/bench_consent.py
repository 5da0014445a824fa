"""Throughput of the consent reader: ``python bench/bench_consent.py [seconds per reader]``.

Plain script, no Django: reads a mixed list of answers (consents, refusals, hesitations,
signs, corrections, long texts) and prints answers/s, µs/answer and how many of the answers
consent. Three readers take turns in short rounds (the machine is shared, so only figures of
the same run are compared, as medians):

- the product: ``conversation.consent.read_answer``;
- the product without its short-answer table (``conversation.consent._read``, the path every
  answer that is not a single closed-set unit takes);
- the reader before the speed-up, loaded from git history (``BASELINE_COMMIT``) when this is
  a git checkout that has that commit; otherwise it is left out and said so.

Writes bench/results/consent.md and consent.figures.json (target: ≥ 100,000 answers/s).
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from conversation import consent  # noqa: E402  (needs the path above)
from conversation.consent import read_answer  # noqa: E402
from conversation.vocabulary import QuestionKind  # noqa: E402

# The last commit of conversation/consent.py before the speed-up (same readings, slower).
BASELINE_COMMIT = "4dfe623d48e3ebbe52bb43023a6cd574df7ce144"
TARGET_ANSWERS_PER_S = 100_000
ROUNDS = 15

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

Reader = Callable[[str], object]


def _run(duration_s: float, reader: Reader = read_answer) -> tuple[int, float, Counter[str]]:
    """Read ANSWERS over and over for ``duration_s``; (answers read, seconds, outcomes)."""
    outcomes: Counter[str] = Counter(read_answer(text).outcome for text in ANSWERS)
    done = 0
    start = time.perf_counter()
    deadline = start + duration_s
    while time.perf_counter() < deadline:
        for text in ANSWERS:
            reader(text)
        done += len(ANSWERS)
    return done, time.perf_counter() - start, outcomes


def _baseline() -> ModuleType | None:
    """conversation/consent.py as of BASELINE_COMMIT, imported under its own name."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BASELINE_COMMIT}:conversation/consent.py"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    name = "_consent_baseline"
    spec = importlib.util.spec_from_loader(name, loader=None)
    if spec is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    exec(compile(source, f"{BASELINE_COMMIT[:7]}:conversation/consent.py", "exec"), vars(module))
    return module


def _same_readings(module: ModuleType) -> bool:
    def seen(reader: Callable[..., object], text: str, kind: QuestionKind) -> tuple[str, ...]:
        reading = reader(text, kind)
        return tuple(str(getattr(reading, f)) for f in ("outcome", "reason", "correction"))

    return all(
        seen(module.read_answer, text, kind) == seen(read_answer, text, kind)
        for text in ANSWERS
        for kind in QuestionKind
    )


def _general_path(text: str) -> object:
    return consent._read(text, QuestionKind.YES_NO)


def main(argv: list[str]) -> int:
    duration_s = float(argv[1]) if len(argv) > 1 else 4.5  # per reader
    readers: dict[str, Reader] = {
        "product": read_answer,
        "product, no short-answer table": _general_path,
    }
    baseline = _baseline()
    if baseline is not None:
        if not _same_readings(baseline):
            print("the baseline reads the benchmark's answers differently", file=sys.stderr)
            return 1
        readers[f"before the speed-up ({BASELINE_COMMIT[:7]})"] = baseline.read_answer

    rates: dict[str, list[float]] = {name: [] for name in readers}
    done_total = 0
    outcomes: Counter[str] = Counter()
    round_s = duration_s / ROUNDS
    for _ in range(ROUNDS):
        for name, reader in readers.items():  # interleaved: every round runs each once
            done, elapsed_s, outcomes = _run(round_s, reader)
            rates[name].append(done / elapsed_s)
            if reader is read_answer:
                done_total += done
    median = {name: statistics.median(values) for name, values in rates.items()}
    rate = median["product"]
    short_hits = sum(
        text.isascii() and text.strip(consent._EDGE_SIGNS).lower() in consent._SHORT_ANSWERS
        for text in ANSWERS
    )

    load = os.getloadavg()[0]
    rows = [
        ("distinct answers", f"{len(ANSWERS)}"),
        ("consent / refusal / unclear", "{consent} / {refusal} / {unclear}".format(**outcomes)),
        ("answered from the short-answer table", f"{short_hits} of {len(ANSWERS)}"),
        ("answers read (product)", f"{done_total:,}"),
        ("rounds × seconds per reader", f"{ROUNDS} × {round_s:.2f}"),
        ("load average (1 min)", f"{load:.2f}"),
    ]
    table = [
        "### Consent reader",
        "",
        f"{len(ANSWERS)} mixed answers ({outcomes['consent']} consent, {outcomes['refusal']} "
        f"refusal, {outcomes['unclear']} unclear; {short_hits} of them single closed-set units "
        f"answered from the short-answer table), {ROUNDS} interleaved rounds per reader, "
        f"median; load average {load:.2f}.",
        "",
        "| reader | answers/s | µs/answer | vs. product |",
        "|---|---|---|---|",
    ]
    for name, answers_per_s in median.items():
        table.append(
            f"| {name} | {answers_per_s:,.0f} | {1e6 / answers_per_s:.2f} "
            f"| {answers_per_s / rate:.2f}× |"
        )
    if baseline is None:
        table.append("| before the speed-up | not measured: no git history here | | |")
    table += [
        "",
        f"Target: ≥ {TARGET_ANSWERS_PER_S:,} answers/s (pure Python) — "
        + ("met." if rate >= TARGET_ANSWERS_PER_S else "not met in this run."),
    ]

    width = max(len(name) for name, _ in rows)
    print("read_answer benchmark")
    for name, value in rows:
        print(f"  {name:<{width}}  {value:>14}")
    from bench import _django  # stdlib only at the top: no Django set-up needed

    _django.write_result("consent", "\n".join(table))
    _django.write_figures(
        "consent",
        [
            {
                "figure": "consent reader",
                "value": rate,
                "unit": "answers/s",
                "limit": None,
                "limit_label": "pure Python, absolute target",
                "ratio": None,
                "target": f"≥ {TARGET_ANSWERS_PER_S:,} answers/s",
                "met": rate >= TARGET_ANSWERS_PER_S,
            }
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
