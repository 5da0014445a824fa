"""Claimed actions are checked against executed ones (issue 27, "File content stays data").

A model that obeys text in a released file may say "Ich habe alle Ihre Regeln gelöscht" although
nothing was deleted. Every sentence of the reply is read with German morphology (HanTa: part of
speech and lemma) before it is sent (``stream_guard``): a sentence is a **claim** when it states,
in the first person or the passive, in the perfect, past or present, that a write verb
(löschen, anlegen, ändern, freigeben, …) happened to an object an app registered (a rule, a
folder, a knowledge file). Questions, offers (a modal, the subjunctive), conditions, negations,
quoted wording and statements with a date of their own are not claims.

A claim is **covered** when this turn's agent result is an executed write of an app whose
objects the sentence names (status ``abgeschlossen`` and a step the app registered as a write).
An uncovered claim is withheld by the sentence guard, named in the ``behauptung`` row of the
PipelineLog (outcome ``behauptung_ohne_ausfuehrung``, the sentences in its details) and said to
the person in the tribunal's note.

Apps register what they execute in ``AppConfig.ready()`` (``register_action_kind``); this module
names none of them (DESIGN.md "Dependencies between apps").
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conversation import morphology
from conversation.pipeline.logging import node_log
from conversation.vocabulary import Status

if TYPE_CHECKING:
    from conversation.pipeline.state import TurnState

logger = logging.getLogger(__name__)

OUTCOME_UNCOVERED = "behauptung_ohne_ausfuehrung"
OUTCOME_COVERED = "belegt"
OUTCOME_NONE = "keine_behauptung"
OUTCOME_FAILED = "pruefung_fehler"
NODE = "behauptung"
NOTE_TEXT = (
    "Hinweis: Eine Aussage über eine Änderung wurde entfernt, weil in diesem Zug nichts "
    "geändert wurde."
)
# Said instead when every sentence of the reply was such a claim (neutral: no du/Sie).
NOTHING_CHANGED_TEXT = "Geändert habe ich dabei nichts."

# Write verbs every app shares (infinitives, as HanTa gives the lemma); an app adds its own.
WRITE_VERBS = frozenset(
    """
    löschen entfernen anlegen erstellen speichern abspeichern ändern abändern schreiben
    überschreiben aktivieren deaktivieren reaktivieren zurücknehmen aufheben streichen
    hinzufügen ersetzen aktualisieren wiederherstellen vergessen eintragen einrichten
    """.split()
)
# Words that make a clause no statement of a done action.
_NEGATIONS = frozenset("nicht nichts kein keine keinen keinem keiner keines nie niemals".split())
_CONDITIONS = frozenset("wenn falls sobald ob bevor damit sofern soll".split())
# Words that make a present-tense "ich lösche" a promise under a condition, not a report.
_THEN = frozenset("dann".split())
_SUBJUNCTIVE = frozenset(
    "hätte hätten hättest wäre wären wärst würde würden würdest könnte könnten".split()
)
_OTHER_SUBJECTS = frozenset("du ihr".split())
_FIRST_PERSON = frozenset("ich wir".split())
_SPEECH_VERBS = frozenset("sagen behaupten fragen meinen glauben denken schreiben".split())
# A main clause that reports what a source says ("In Ihrer Notiz steht, dass …"): the write in
# its dass-clause is the source's content, not something Nova claims to have done.
_REPORT_VERBS = frozenset("stehen heißen lauten berichten erwähnen vermerken notieren".split())
# "Laut der Notiz …", "der Notiz zufolge …": an event a source reports.
_SOURCE_MARKERS = frozenset("laut zufolge gemäß".split())
# A date or a time of its own: the sentence reports an earlier event, not this turn's.
_EARLIER = frozenset("gestern vorgestern damals früher neulich".split())
_LAST = frozenset("letzte letzten letztes vorige vorigen".split())
_PERIODS = frozenset("woche monat jahr mal sommer winter".split())
_AUX_LEMMAS = frozenset({"haben", "sein", "werden"})

_QUOTED = re.compile(
    r"„[^“”\"]*[“”\"]|\"[^\"]*\"|“[^”]*”|»[^«]*«|«[^»]*»|‚[^‘’]*[‘’]|(?<!\w)'[^'\n]+'(?!\w)"
)
_TOKEN = re.compile(r"[\wÄÖÜäöüß]+(?:-[\wÄÖÜäöüß]+)*|[^\w\s]")
_CLAUSE_BREAK = frozenset({",", ";", "und", "aber", "sondern", "oder", "–", "-"})
_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n+")


@dataclass(frozen=True)
class ActionKind:
    """What one app's agent writes: the nouns that name its objects (lower-case lemmas; a
    compound counts by its last part, "Milchregel" → "regel"), write verbs of its own beside
    ``WRITE_VERBS``, and the steps of its ``abgeschlossen`` results that are writes."""

    name: str
    agent: str
    nouns: frozenset[str]
    steps: frozenset[str]
    verbs: frozenset[str] = frozenset()


_KINDS: dict[str, ActionKind] = {}


def register_action_kind(kind: ActionKind) -> None:
    """Add (or, under the same ``name``, replace) what an app counts as an executed write."""
    _KINDS[kind.name] = kind


def unregister_action_kind(name: str) -> None:
    _KINDS.pop(name, None)


def action_kinds() -> list[ActionKind]:
    return list(_KINDS.values())


@dataclass(frozen=True)
class Claim:
    """One sentence that states a write: its verb, the kinds whose objects it names, and the
    grammatical form that made it a claim."""

    sentence: str
    verb: str
    kinds: tuple[str, ...]
    form: str  # "perfekt" | "passiv" | "praesens" | "futur" | "kopf"

    def as_json(self) -> dict[str, Any]:
        return {
            "satz": self.sentence,
            "verb": self.verb,
            "art": list(self.kinds),
            "form": self.form,
        }


_Word = morphology.Word
_tagger = morphology.tagger


def warm_up_in_background() -> None:
    """Load the tagger beside the model's first tokens (about 0.2 s once per process), not in
    front of the first sentence."""
    morphology.warm_up_in_background()


def _verb_lemma(word: _Word) -> str:
    """The lemma of a verb form; HanTa reads some participles in a passive as adjectives
    ("wurde entfernt" → ADJ(D) "entfernt"): those are read again in a perfect frame."""
    if word.tag.startswith("VV"):
        return word.lemma.lower()
    if _is_participle(word):
        again = _tagger().tag(["ich", "habe", "es", word.low])[-1]
        if again.tag == "VV(PP)":
            return again.lemma.lower()
        if word.low.endswith("t"):
            # A weak participle without "ge-" ("entfernt", "aktualisiert"): stem + "en".
            return word.low[:-1] + "en"
    return ""


def _is_participle(word: _Word) -> bool:
    """A participle, or a word HanTa may have misread as one's neighbour: an adverbial
    adjective ("entfernt") or an unknown capitalised word ("Gelöscht" opening a sentence)."""
    if word.tag == "VV(PP)":
        return True
    return word.tag.startswith("ADJ(D)") or word.tag in {"NE", "XY"}


def _kinds_named(words: list[_Word], verb: str) -> tuple[str, ...]:
    nouns = {w.lemma.lower() for w in words if w.tag.startswith("N")}
    nouns |= {w.low for w in words if w.tag.startswith("N")}
    found = []
    for kind in _KINDS.values():
        if verb not in WRITE_VERBS and verb not in kind.verbs:
            continue
        # A compound names its kind by its last part: "Milchregel", "Siez-Regel".
        if any(n.endswith(noun) for n in nouns for noun in kind.nouns):
            found.append(kind.name)
    return tuple(found)


def _clauses(words: list[_Word]) -> list[list[_Word]]:
    """Clauses split at commas and conjunctions. A clause joined by a conjunction without its
    own subject and auxiliary shares the previous one's ("Ich habe X geprüft und alle
    gelöscht")."""
    out: list[list[_Word]] = []
    current: list[_Word] = []
    joined = False  # the current clause follows a conjunction
    for word in [*words, _Word(",", ",", "$,")]:
        if word.low not in _CLAUSE_BREAK and word.tag != "KON":
            current.append(word)
            continue
        if current:
            own = [w for w in current if w.low in _FIRST_PERSON or w.tag.startswith("VA")]
            if joined and not own and out:
                previous = [w for w in out[-1] if w.low in _FIRST_PERSON or w.tag.startswith("VA")]
                current = [*previous, *current]
            out.append(current)
        current = []
        joined = word.tag == "KON" or word.low in {"und", "oder", "aber", "sondern"}
    return out


def _all_verbs() -> frozenset[str]:
    return WRITE_VERBS.union(*(k.verbs for k in _KINDS.values()))


def _clause_form(clause: list[_Word], verbs: frozenset[str], condition: bool) -> tuple[str, str]:
    """(verb, form) when the clause states a write; ("", "") otherwise."""
    lows = {w.low for w in clause}
    if lows & _NEGATIONS or lows & _SUBJUNCTIVE or lows & _EARLIER:
        return "", ""
    if lows & _LAST and lows & _PERIODS:
        return "", ""  # "letzte Woche"
    if any(w.tag.startswith("PW") for w in clause):
        return "", ""  # an indirect question: "…, welche Regeln gespeichert sind"
    if lows & _CONDITIONS or any(w.tag.startswith("VM") for w in clause):
        return "", ""  # "Wenn ich die Regel lösche …", "Ich kann die Regel löschen"
    if any(w.tag == "CARD" for w in clause):
        return "", ""  # a number or a year: an event with a date of its own
    first = bool(lows & _FIRST_PERSON)
    other = bool(lows & _OTHER_SUBJECTS) or any(
        w.text == "Sie" and i > 0 and w.tag.startswith("PPER") for i, w in enumerate(clause)
    )
    aux = [w for w in clause if w.tag.startswith("VA") and w.lemma.lower() in _AUX_LEMMAS]
    has_aux = any(a.lemma.lower() in {"haben", "sein"} for a in aux)
    finite = [w for w in clause if w.tag.startswith(("VA(FIN)", "VV(FIN)", "VM"))]
    for i, word in enumerate(clause):
        lemma = _verb_lemma(word) if (word.tag.startswith("VV") or _is_participle(word)) else ""
        if word.tag == "VV(FIN)":
            lemma = _separable(clause, i, lemma, verbs)
        if lemma not in verbs:
            continue
        participle = word.tag == "VV(PP)" or (_is_participle(word) and bool(lemma))
        # "habe … vergessen": a participle that looks like the infinitive.
        participle = participle or (word.tag == "VV(INF)" and has_aux)
        words_only = [w for w in clause if not w.tag.startswith("$")]
        if participle and not finite and word is words_only[-1] and len(words_only) > 1:
            return lemma, "kopf"  # "Regel gelöscht, du bist frei."
        if participle and i == 0 and len(clause) > 1 and clause[1].text == ":":
            return lemma, "kopf"  # "Gelöscht: alle Regeln."
        if participle and aux:
            if first:
                return lemma, "perfekt"
            if other:
                return "", ""
            if any(a.lemma.lower() in {"sein", "werden"} for a in aux):
                return lemma, "passiv"
            if any(a.low in {"habe", "haben"} for a in aux):
                return lemma, "perfekt"  # "Habe alle Regeln gelöscht." (subject left out)
        if word.tag == "VV(FIN)" and first and not other and not condition:
            return lemma, "praesens"  # "Ich lösche jetzt alle deine Regeln."
        will = any(a.lemma.lower() == "werden" for a in aux)
        if word.tag == "VV(INF)" and first and not condition and will:
            return lemma, "futur"  # "Ich werde alle deine Regeln löschen."
    return "", ""


def _separable(clause: list[_Word], i: int, lemma: str, verbs: frozenset[str]) -> str:
    """A finite verb with its separated particle: "gebe … frei" → "freigeben"."""
    for later in clause[i + 1 :]:
        if later.tag in {"PTKVZ", "ADJ(D)", "ADV"} and later.low + lemma in verbs:
            return later.low + lemma
    return lemma


def _strip_quotes(sentence: str) -> str:
    """Quoted wording is someone's words (a rule, the person's sentence), not a statement."""
    return _QUOTED.sub(" « » ", sentence)


def sentence_claim(sentence: str) -> Claim | None:
    """The claim this sentence makes, or None. A question is never a claim."""
    plain = _strip_quotes(sentence).strip()
    if not plain or plain.rstrip(" \"“”»)'").endswith("?") or not _KINDS:
        return None
    tokens = _TOKEN.findall(plain)
    if len(tokens) > 80:
        tokens = tokens[:80]
    words = _tagger().tag(tokens)
    clauses = _clauses(words)
    lows = {w.low for w in words}
    # Reported speech: "Du hast gesagt, du hättest die Regel gelöscht".
    if any(_verb_lemma(w) in _SPEECH_VERBS and w.tag.startswith("VV") for w in words) and not (
        lows & _FIRST_PERSON
    ):
        return None
    if not lows & _FIRST_PERSON and (lows & _SOURCE_MARKERS or _reports_a_source(clauses)):
        return None
    condition = bool(lows & (_CONDITIONS | _THEN)) or "dass" in lows
    verbs = _all_verbs()
    for clause in clauses:
        verb, form = _clause_form(clause, verbs, condition)
        if not verb:
            continue
        kinds = _kinds_named(words, verb)
        if kinds:
            return Claim(sentence.strip(), verb, kinds, form)
    return None


def _reports_a_source(clauses: list[list[_Word]]) -> bool:
    """True when the first clause reports a source's words and a dass-clause follows:
    "In Ihrer Notiz steht, dass die Datei im März geändert wurde." """
    if len(clauses) < 2 or not any(w.low in {"dass", "daß"} for c in clauses[1:] for w in c):
        return False
    reporting = _REPORT_VERBS | _SPEECH_VERBS
    return any(w.tag.startswith("VV") and w.lemma.lower() in reporting for w in clauses[0])


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text) if s.strip()]


def find_claims(text: str) -> list[Claim]:
    return [c for s in sentences(text) if (c := sentence_claim(s)) is not None]


# --- what the turn executed ---------------------------------------------------------------------


def executed_kinds(state: TurnState) -> set[str]:
    """The kinds whose write this turn executed: its agent result, ``abgeschlossen`` with a
    step that the agent's app registered as a write (a "schon_ausgefuehrt" answer repeats an
    executed write and counts; a rule that already existed wrote nothing and does not)."""
    result = state.agent_result
    if result is None or result.status != Status.DONE:
        return set()
    return {
        kind.name
        for kind in _KINDS.values()
        if kind.agent == state.route and result.step in kind.steps
    }


@dataclass
class ClaimCheck:
    """The check the sentence guard runs on each sentence before it is sent."""

    executed: set[str]
    covered: list[dict[str, Any]] = field(default_factory=list)
    # The agent's own deterministic text this turn (normalised): a sentence taken from it is
    # the server's word or a passage it quoted from a file, not a claim of the model's.
    trusted: str = ""
    # Why the check could not read a sentence (the tagger failed): named in the turn's checks.
    failures: list[str] = field(default_factory=list)

    def __call__(self, sentence: str) -> dict[str, Any] | None:
        """The uncovered claim this sentence makes (it must be withheld), or None."""
        if self.trusted and (norm := _norm(sentence)) and norm in self.trusted:
            return None
        try:
            claim = sentence_claim(sentence)
        except Exception as exc:
            # The tagger is a check, not a second way to lose the reply: the sentence goes out
            # and the failure is named (outcome ``pruefung_fehler``).
            logger.exception("claim check failed", extra={"outcome": OUTCOME_FAILED})
            self.failures.append(f"{type(exc).__name__}: {exc}"[:200])
            return None
        if claim is None:
            return None
        if set(claim.kinds) & self.executed:
            self.covered.append(claim.as_json())
            return None
        return claim.as_json()


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def check_for(state: TurnState) -> ClaimCheck:
    warm_up_in_background()
    result = state.agent_result
    return ClaimCheck(
        executed=executed_kinds(state), trusted=_norm(result.text) if result is not None else ""
    )


def run(state: TurnState, guard_record: dict[str, Any] | None) -> dict[str, Any]:
    """After the sentence guard: what it withheld (its record), what was covered, and the
    claims in the composer's content (the content is not shown; the reply made from it is
    checked). Kept in ``state.checks["behauptungen"]``; a withheld claim also gets a row of its
    own (node ``behauptung``, outcome ``behauptung_ohne_ausfuehrung``) so it is never silent."""
    record = guard_record or {}
    withheld = list(record.get("behauptungen_ohne_ausfuehrung") or [])
    covered = list(record.get("behauptungen_belegt") or [])
    failures = list(record.get("behauptungen_fehler") or [])
    executed = sorted(executed_kinds(state))
    content: list[dict[str, Any]] = []
    if state.composer_text:
        try:
            content = [
                c.as_json()
                for c in find_claims(state.composer_text)
                if not set(c.kinds) & set(executed)
            ]
        except Exception as exc:
            logger.exception("claim check of the content failed")
            failures.append(f"{type(exc).__name__}: {exc}"[:200])
    if withheld:
        outcome = OUTCOME_UNCOVERED
    elif failures:
        outcome = OUTCOME_FAILED
    elif covered:
        outcome = OUTCOME_COVERED
    else:
        outcome = OUTCOME_NONE
    found: dict[str, Any] = {
        "outcome": outcome,
        "ausgefuehrt": executed,
        "zurueckgehalten": withheld,
        "belegt": covered,
        "inhalt_ohne_ausfuehrung": content,
        **({"fehler": failures} if failures else {}),
    }
    state.checks["behauptungen"] = found
    if withheld or content or failures:
        with node_log(state, NODE) as log:
            named = {OUTCOME_UNCOVERED, OUTCOME_FAILED}
            log.outcome = outcome if outcome in named else "inhalt_ohne_ausfuehrung"
            log.details = found
        logger.warning(
            "reply claimed an action that was not executed",
            extra={"outcome": log.outcome, "count": len(withheld)},
        )
    return found


def note(withheld: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The note under the reply when a claim was withheld."""
    if not withheld:
        return None
    return {
        "text": NOTE_TEXT,
        # The note's shape is the tribunal's (the API and the chat read these keys).
        "verstoesse": [],
        "zitate_ohne_beleg": [],
        "behauptungen_ohne_ausfuehrung": [str(w.get("satz", "")) for w in withheld],
    }
