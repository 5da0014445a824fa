"""The consent reader reads every answer exactly as before its speed-up (issue 16).

``consent_readings.json`` (beside this file) is a frozen table: for every case of the labelled
table (every text of test_consent.py and test_consent_plain.py, and the consent-plus-spoiler
combinations), for generated variants of each (case, punctuation, emoji, whitespace) and for
random answers mixed from the closed sets, it holds the reading — outcome, reason and
correction, for a yes/no and for a choice question — that ``conversation/consent.py`` gave
at commit 4dfe623, before the speed-up. The reader must give the same for every one.

A row is ``[yes/no reading]`` when the choice reading follows from it as the reader defines
(a refusal or an empty answer reads the same; everything else is ``choice_never_consents``),
else ``[yes/no reading, choice reading]`` (a correction with a refusal stem inside its quote
refuses a choice); a reading is ``[outcome, reason]`` or ``[outcome, reason, correction]``.

Pure: no Django, no database. After a deliberate change of readings (never to make this test
pass), regenerate the table with the current reader and read its diff:
``.venv/bin/python -m conversation.tests.test_consent_speed_equivalence``.
"""

from __future__ import annotations

import json
import random
import sys
import types
from collections.abc import Callable, Iterable
from pathlib import Path

from _pytest.mark.structures import ParameterSet

from conversation.consent import (
    CONSENT_PHRASES,
    CONSENT_WORDS,
    FILLER_WORDS,
    NON_REFUSING_WORDS,
    REFUSAL_STEMS,
    REFUSAL_WORDS,
    WHOLE_CONSENTS,
    Reading,
    read_answer,
)
from conversation.tests import test_consent, test_consent_plain
from conversation.vocabulary import QuestionKind

TABLE = Path(__file__).with_name("consent_readings.json")

# Beside the labelled table: words that hold a refusal stem by accident, and answers that
# people type often. Their readings are frozen like every other (see the report on issue 16:
# "Banane" refuses because of the stem "ne" in it; the seed searches stems as substrings).
EXTRA = [
    "Banane",
    "keine Ahnung",
    "Neeein",
    "Nein danke",
    "Nebel",
    "Dänemark",
    "ohne Zweifel ja",
    "ja, ohne Zweifel",
    "ohne mich",
    "Klasse",
    "ja, Klasse",
    "Linie",
    "nötig",
    "weglassen",
    "ablehnen",
    "mitnichten",
    "garnicht",
    "keine Einwände",
    "ich nehme an",
    "ich kenne das",
    "Genie",
    "ja, eine Minute",
    "Ja gerne",
    "ja, gerne!",
    "OK danke",
    "Ja bitte!",
    "ok 👍",
    "Nein, danke.",
    "Nö.",
    "ja\u00a0bitte",
    "ΑΣ.Α ja",  # final sigma: lower-cased word by word outside ASCII
    "İch bin einverstanden",  # "İ".lower() is two characters
    "ja_bitte",
    "na_klar",
    "\x1cja",
    "ja\x1c",
]


def _strings(value: object, into: set[str]) -> None:
    if isinstance(value, str):
        into.add(value)
    elif isinstance(value, ParameterSet):
        _strings(value.values, into)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _strings(item, into)


def _functions(obj: object) -> Iterable[types.FunctionType]:
    if isinstance(obj, types.FunctionType):
        yield obj
    elif isinstance(obj, type) and obj.__name__.startswith("Test"):
        yield from (f for f in vars(obj).values() if isinstance(f, types.FunctionType))


def labelled_cases() -> list[str]:
    """Every text of the labelled table: module-level case lists and parametrized values."""
    texts: set[str] = set()
    for module in (test_consent, test_consent_plain):
        for name, obj in vars(module).items():
            if name.isupper() and isinstance(obj, list):
                _strings(obj, texts)
            for function in _functions(obj):
                for mark in getattr(function, "pytestmark", []):
                    if mark.name == "parametrize":
                        _strings(list(mark.args[1]), texts)
    texts.update(
        text.rstrip() + spoiler
        for text in test_consent.CLOSED_CONSENT
        for spoiler in test_consent.SPOILERS
    )
    return sorted(texts)


_VARIANTS: list[Callable[[str], str]] = [
    str.upper,
    lambda t: "  " + t.capitalize() + "!\n",
    lambda t: t + "?",
    lambda t: t + " \U0001f44d",
    lambda t: t.replace(" ", "\u00a0") if " " in t else "\u00a0" + t,
    lambda t: t.replace(" ", ", ") + ".",
    lambda t: "\t" + t.title() + "\u2026",
    lambda t: t.swapcase() + " \U0001f914",
]


def generated_cases() -> list[str]:
    """Three variants of every labelled case (in turn from _VARIANTS), and random answers."""
    texts: set[str] = set()
    for index, text in enumerate(labelled_cases() + EXTRA):
        for k in range(3):
            texts.add(_VARIANTS[(index + k) % len(_VARIANTS)](text))
    rng = random.Random(16)
    vocabulary = sorted(
        CONSENT_WORDS | FILLER_WORDS | NON_REFUSING_WORDS | REFUSAL_WORDS | set(REFUSAL_STEMS)
    )
    vocabulary += sorted({word for phrase in CONSENT_PHRASES for word in phrase})
    vocabulary += sorted({word for whole in WHOLE_CONSENTS for word in whole.split()})
    vocabulary += ["aber", "morgen", "na", "2", "'Boss'", "nenn es", "statt", "'Chef'"]
    signs = [" ", " ", " ", ", ", ",", ". ", "!", ";", "-", " (", ") ", "\u2026", "\u2013"]
    signs += ["?", "\U0001f44d", "\U0001f914", "\u00a0", "\t", "  ", ",, "]
    for _ in range(1200):
        parts = [rng.choice(vocabulary) + rng.choice(signs) for _ in range(rng.randint(1, 5))]
        text = "".join(parts)
        texts.add(text.upper() if rng.random() < 0.2 else text)
    return sorted(texts)


def all_cases() -> list[str]:
    return sorted(set(labelled_cases()) | set(EXTRA) | set(generated_cases()))


def _shown(reading: Reading) -> list[str]:
    shown = [str(reading.outcome), reading.reason]
    if reading.correction is not None:
        shown.append(reading.correction)
    return shown


def _choice_from(yes_no: list[str]) -> list[str]:
    if yes_no[0] == "refusal" or yes_no[1] in ("empty", "not_text"):
        return yes_no
    return ["unclear", "choice_never_consents"]


def _row(reader: Callable[[str, QuestionKind], Reading], text: str) -> list[list[str]]:
    yes_no = _shown(reader(text, QuestionKind.YES_NO))
    choice = _shown(reader(text, QuestionKind.CHOICE))
    return [yes_no] if choice == _choice_from(yes_no) else [yes_no, choice]


def readings(reader: Callable[[str, QuestionKind], Reading]) -> dict[str, list[list[str]]]:
    """Text -> its row (see the module docstring)."""
    return {text: _row(reader, text) for text in all_cases()}


def _frozen() -> dict[str, list[list[str]]]:
    table: dict[str, list[list[str]]] = json.loads(TABLE.read_text(encoding="utf-8"))["readings"]
    return table


def test_every_frozen_answer_reads_as_before() -> None:
    frozen = _frozen()
    assert len(frozen) > 5000
    outcomes = {row[0][0] for row in frozen.values()}
    assert outcomes == {"consent", "refusal", "unclear"}  # the table reaches every outcome
    assert sum(len(row) == 2 for row in frozen.values()) > 0  # and the choice exceptions
    differ = [
        (text, expected, now)
        for text, expected in frozen.items()
        if (now := _row(read_answer, text)) != expected
    ]
    assert not differ, f"{len(differ)} answers read differently, e.g. {differ[:10]}"


def test_the_frozen_table_covers_the_labelled_table_and_its_variants() -> None:
    # A case added to test_consent.py needs its frozen reading: regenerate (see the docstring).
    missing = sorted(set(all_cases()) - set(_frozen()))
    assert not missing, f"{len(missing)} cases have no frozen reading, e.g. {missing[:10]}"


def test_the_labelled_table_is_read_through() -> None:
    # The collection finds the table's cases, not just a few lists.
    cases = set(labelled_cases())
    assert len(cases) > 1000
    for text in ("ja", "nein", "ja\u037e", "ist (das) ok", "ja, aber sag 'Boss' statt 'Chef'"):
        assert text in cases
    assert "sicher" in cases  # test_consent_plain.py


def _write(reader: Callable[[str, QuestionKind], Reading], source: str) -> None:
    """The table as JSON with one answer per line, so that its diff shows each change."""
    rows = readings(reader)
    head = json.dumps({"source": source})
    lines = [
        json.dumps(text, ensure_ascii=False) + ": " + json.dumps(row, ensure_ascii=False)
        for text, row in sorted(rows.items())
    ]
    body = head[:-1] + ', "readings": {\n' + ",\n".join(lines) + "\n}}\n"
    json.loads(body)  # still one JSON document
    TABLE.write_text(body, encoding="utf-8")
    print(f"{TABLE}: {len(rows)} answers")


if __name__ == "__main__":
    _write(read_answer, " ".join(sys.argv[1:]) or "conversation/consent.py, regenerated")
