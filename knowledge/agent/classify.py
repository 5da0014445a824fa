"""Step 1: read the person's order into a typed request (no model call).

Routing (the router asks this agent first, priority 5): only orders that name *her own*
knowledge, or ask her to learn a released file, come here. Plain questions about released files
stay with the files read agent ("Was steht in meinen Notizen über X?" — *meine* notes are the
person's records), and a plain "Was weißt du über X?" stays a conversation turn, where
[EIGENES WISSEN], [GEDAECHTNIS] and [AUFZEICHNUNGEN] all answer together on the turn vector.

The sentence is read with German morphology (issue 28), not matched word for word: HanTa (the
Hannover tagger, loaded once by ``conversation.pipeline.claims``) gives every word its lemma and
STTS part of speech; a file name ("brennen.md") is one token, tagged as the noun "Datei". What
decides is the *verb's lemma* (a separated particle joined: "Präg dir … ein" → einprägen,
"Nimm … auf" → aufnehmen), *who is addressed* (an imperative, du/dir, Sie, a modal question)
and *the object* (a file name, "dein Wissen", "den Absatz über X"), so extra words ("gründlich",
"noch einmal", "bitte") and another word order change nothing:

- lernen:   a learn verb (merken, einprägen, lernen, durchlesen, durcharbeiten; aufnehmen,
            übernehmen, speichern only "in dein Wissen") aimed at Nova, with a file name in the
            main clause — "Merk dir das Wichtigste aus brennen.md gründlich", "Lies brennen.md
            noch einmal und merk es dir", "Präg dir brennen.md ein", "Lerne die Datei
            tomaten.md", "Nimm brennen.md in dein Wissen auf" — or with a described file
            ("Präge dir die Notizen zum Hochbeet ein": ``query`` "Hochbeet", the file is found
            by the executor among the released ones).
- loeschen: a delete verb (löschen, entfernen, streichen, vergessen, tilgen, rauswerfen,
            rausnehmen) aimed at Nova, a part noun (Absatz, Abschnitt, Teil, Stelle, Passage,
            Satz) with its topic ("über/zu X") and "dein Wissen" in any order — "Entferne aus
            deinem Wissen den Absatz über Kegel", "Streich den Absatz über Kegel aus deinem
            Wissen".
- fragen:   "dein Wissen" (Wissensdateien, Bibliothek, deine Notizen; "Ihr Wissen") with a topic
            in a question or a look-up order — "Was weißt du in deinem Wissen über Glasuren",
            "Was steht in deinem Wissen zu Glasuren?", "Schau in deinem Wissen nach, was du zu X
            hast" — or, without it, a question to her in the perfect of merken/lernen with a
            topic: "Was hast du dir über Keramik gemerkt?".

Stays conversation, by decision: a negated order ("Merk dir brennen.md nicht"); the person
speaking of themselves ("Ich merke mir das schon", "Mein Wissen über Keramik ist begrenzt");
"Weißt du, was mir passiert ist?"; "Ich will mehr über Keramik wissen" — a wish to learn about
the world, not a request about her library: the conversation turn answers it and still sees
[EIGENES WISSEN] on the turn vector; "Was hast du dir über mich gemerkt?" — a question about the
person is memory, not her library; a file named only inside a subordinate clause ("Merk dir,
dass brennen.md morgen fertig ist").

A cheap word gate runs first, so a message without any cue word is never tagged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A file name: a stem of at least two characters and an extension with a letter ("brennen.md",
# "notizen/hochbeet.txt"); "z.B." and "1.5" are not file names.
_FILE = re.compile(r"(?<![\w/.-])[\w-][\w./-]*[\w-]\.(?=\w{0,4}[A-Za-z])\w{1,5}\b")
_TOKEN = re.compile(r"[\wÄÖÜäöüß]+(?:-[\wÄÖÜäöüß]+)*|[^\w\s]")
# The gate: without one of these cue stems the sentence is not tagged at all.
_CUE = re.compile(
    r"wissen|weißt|weisst|bibliothek|merk|präg|praeg|lern|nimm|nehm|übernimm|speicher|"
    r"lösch|loesch|entfern|streich|vergiss|vergess|tilg|wirf|werf",
    re.IGNORECASE,
)

FILE_TOKEN = "Datei"
ABOUT = frozenset({"über", "ueber", "zu", "zum", "zur", "von", "vom", "mit"})
LEARN_VERBS = frozenset(
    {"merken", "einprägen", "lernen", "auswendiglernen", "durchlesen", "durcharbeiten",
     "einlesen"}
)  # fmt: skip
# Learn verbs that only mean "learn" with "in dein Wissen" ("Nimm brennen.md in dein Wissen auf").
INTO_VERBS = frozenset({"aufnehmen", "übernehmen", "speichern", "abspeichern", "einspeichern"})
DELETE_VERBS = frozenset(
    {"löschen", "entfernen", "streichen", "vergessen", "tilgen", "rauswerfen", "herauswerfen",
     "rausnehmen", "herausnehmen", "rausstreichen", "herausstreichen", "rauslöschen"}
)  # fmt: skip
LOOKUP_VERBS = frozenset(
    {"nachschauen", "nachsehen", "nachgucken", "schauen", "sehen", "gucken", "suchen",
     "durchsuchen", "sagen", "zeigen", "nennen", "erzählen"}
)  # fmt: skip
ASK_VERBS = frozenset({"wissen", "stehen", "haben", "finden", "geben", "kennen", "merken",
                       "lernen", "sein"})  # fmt: skip
PART_NOUNS = frozenset({"absatz", "abschnitt", "teil", "stelle", "passage", "satz"})
DOC_NOUNS = frozenset(
    {"notiz", "notizen", "datei", "unterlage", "unterlagen", "aufzeichnung", "aufzeichnungen",
     "dokument", "text", "anleitung"}
)  # fmt: skip
_MINE_NOUNS = frozenset({"wissen", "bibliothek", "notiz", "notizen", "wissenssammlung"})
_PARTICLES = frozenset({"ein", "auf", "durch", "nach", "raus", "heraus", "aus", "ab", "weg"})
_NEGATION = frozenset({"nicht", "nie", "niemals", "kein", "keine", "keinen", "keinem", "nichts"})
_SUBJECTS = frozenset({"ich", "wir", "er", "man", "mein", "meine", "unser", "unsere"})
_PERSON = frozenset({"mich", "mir", "uns", "dich", "dir", "sie", "ihn", "euch"})
_LEAD = frozenset({"bitte", "jetzt", "nun", "dann", "und", "also", "mal", "doch", "einfach"})
_SUBORDINATE = frozenset({"KOUS", "PRELS", "PRELAT"})
# HanTa does not know every imperative of a strong verb.
_IMPERATIVES = {"vergiss": "vergessen", "iss": "essen", "lies": "lesen"}


@dataclass(frozen=True)
class KnowledgeRequest:
    kind: str  # fragen | loeschen | lernen
    query: str = ""  # fragen/loeschen: the topic; lernen without a file name: the file described
    file: str = ""  # lernen: the file name as written


@dataclass
class _Word:
    text: str
    lemma: str
    tag: str
    start: int
    end: int
    file: str = ""  # the file name this token stands for

    @property
    def low(self) -> str:
        return self.text.lower()


def _tag(tokens: list[str]) -> list[tuple[str, str]]:
    """(lemma, STTS tag) per token from the one shared HanTa tagger."""
    from conversation.morphology import tagger as _tagger

    return [(str(w.lemma), str(w.tag)) for w in _tagger().tag(tokens)]


def _words(text: str) -> list[_Word]:
    out: list[_Word] = []
    pos = 0
    for match in _FILE.finditer(text):
        out.extend(_plain(text, pos, match.start()))
        out.append(_Word(FILE_TOKEN, FILE_TOKEN, "NN", match.start(), match.end(), match.group()))
        pos = match.end()
    out.extend(_plain(text, pos, len(text)))
    if not out:
        return out
    tagged = _tag([w.text if not w.file else FILE_TOKEN for w in out])
    for word, (lemma, tag) in zip(out, tagged, strict=True):
        if not word.file:
            word.lemma, word.tag = lemma, tag
    _fix_clause_initial_verbs(out)
    return out


def _plain(text: str, a: int, b: int) -> list[_Word]:
    return [
        _Word(m.group(), "", "", a + m.start(), a + m.end()) for m in _TOKEN.finditer(text[a:b])
    ]


def _fix_clause_initial_verbs(words: list[_Word]) -> None:
    """HanTa reads some imperatives opening a sentence as names or nouns ("Lies" → NE "Li",
    "Streich" → NN): a clause-initial word that is not a verb is tagged again after "bitte"."""
    for i, word in enumerate(words):
        initial = i == 0 or words[i - 1].low in _LEAD or words[i - 1].tag.startswith("$")
        if not initial or word.tag.startswith(("V", "P", "K", "ART", "APPR")) or word.file:
            continue
        if word.low in _IMPERATIVES:
            word.lemma, word.tag = _IMPERATIVES[word.low], "VV(IMP)"
            continue
        lemma, tag = _tag(["bitte", word.low, "es"])[1]
        if tag.startswith("VV"):
            word.lemma, word.tag = lemma, tag


def _sentences(words: list[_Word]) -> list[list[_Word]]:
    out: list[list[_Word]] = [[]]
    for word in words:
        out[-1].append(word)
        if word.tag == "$." and word.text in ".!?":
            out.append([])
    return [s for s in out if s]


def _main_clause(sentence: list[_Word]) -> list[_Word]:
    """The words outside subordinate clauses (from "dass"/"weil"/a relative pronoun to the next
    comma)."""
    out: list[_Word] = []
    inside = False
    for word in sentence:
        if word.tag in _SUBORDINATE:
            inside = True
        elif inside and word.tag == "$,":
            inside = False
            continue
        if not inside:
            out.append(word)
    return out


def _verb_lemmas(clause: list[_Word]) -> list[tuple[int, str, str]]:
    """(index, lemma with a separated particle joined, tag) for every full verb."""
    out: list[tuple[int, str, str]] = []
    for i, word in enumerate(clause):
        if not word.tag.startswith("VV"):
            continue
        lemma = word.lemma.lower()
        if word.tag in {"VV(IMP)", "VV(FIN)"}:
            for later in clause[i + 1 :]:
                if later.tag.startswith("V") or later.tag == "$,":
                    break
                if later.tag == "PTKVZ" and later.low in _PARTICLES:
                    lemma = later.low + lemma
                    break
            if lemma == "wissen" and word.tag == "VV(IMP)":
                word.tag = "VV(FIN)"  # "Weißt du" is a question, not an order
        out.append((i, lemma, word.tag))
    return out


def _addressed(clause: list[_Word], verb_at: int) -> bool:
    """Is the verb an order or a request to Nova: an imperative, a verb opening the sentence
    without a subject of its own, du/dir/Sie, or a modal question ("Kannst du …")?"""
    verb = clause[verb_at]
    before = [w for w in clause[:verb_at] if w.low not in _LEAD and not w.tag.startswith("$")]
    if any(w.low in _SUBJECTS and w.tag.startswith(("PPER", "PPOSAT")) for w in clause):
        if not any(w.low in {"du", "dir", "dich"} for w in clause):
            return False
    if verb.tag == "VV(IMP)":
        return True
    if verb.tag == "VV(FIN)" and not before:
        after = clause[verb_at + 1] if verb_at + 1 < len(clause) else None
        return after is None or after.low not in {"ich", "wir", "er", "es", "man"}
    return any(w.low in {"du", "dir", "dich"} for w in clause) or any(
        w.text == "Sie" and i > 0 for i, w in enumerate(clause)
    )


def _is_mine(clause: list[_Word], i: int) -> bool:
    """A possessive of Nova's ("dein", "Ihr" mid-sentence) before a knowledge noun."""
    word = clause[i]
    if word.tag != "PPOSAT":
        return False
    if not (word.lemma.lower() == "dein" or (word.text[:1] == "I" and i > 0)):
        return False
    for nxt in clause[i + 1 : i + 3]:
        if nxt.tag.startswith("N"):
            low = nxt.low
            return low in _MINE_NOUNS or low.startswith("wissens")
        if not nxt.tag.startswith("ADJ"):
            return False
    return False


def _mine_span(clause: list[_Word]) -> tuple[int, int] | None:
    """(first, last) index of the phrase "in/aus deinem Wissen" in the clause."""
    for i in range(len(clause)):
        if _is_mine(clause, i):
            first = i - 1 if i > 0 and clause[i - 1].tag.startswith("APPR") else i
            last = next(j for j in range(i + 1, len(clause)) if clause[j].tag.startswith("N"))
            return first, last
    return None


def _topic(
    text: str, clause: list[_Word], *, after: int = -1, skip: tuple[int, int] | None = None
) -> str:
    """The words after the first "über/zu/von X" (after index ``after``, outside the phrase
    ``skip``) up to "in/aus deinem Wissen", a verb, a comma or the end."""
    for i in range(after + 1, len(clause)):
        if skip and skip[0] <= i <= skip[1]:
            continue
        if clause[i].low not in ABOUT or not clause[i].tag.startswith("APPR"):
            continue
        end = i + 1
        while end < len(clause):
            word = clause[end]
            if skip and end == skip[0]:
                break
            if word.tag.startswith(("V", "$", "PTKVZ", "KOUS", "PW")):
                break
            end += 1
        span = clause[i + 1 : end]
        if not span:
            continue
        if span[0].low == "thema" and len(span) > 1:
            span = span[1:]
        if all(w.low in _PERSON or w.tag in {"PPER", "PRF"} for w in span):
            return ""  # "über mich": the person, not a topic of her library
        return _clean(text[span[0].start : span[-1].end])
    return ""


def _clean(query: str) -> str:
    return query.strip().strip("„“\"'»«").strip()


def _negated(clause: list[_Word]) -> bool:
    return any(w.low in _NEGATION for w in clause)


def _is_question(sentence: list[_Word]) -> bool:
    first = next((w for w in sentence if w.low not in _LEAD), None)
    return sentence[-1].text == "?" or (
        first is not None and (first.tag.startswith("PW") or first.tag.startswith("V"))
    )


def _learn(
    text: str, clause: list[_Word], verbs: list[tuple[int, str, str]]
) -> KnowledgeRequest | None:
    mine = _mine_span(clause)
    for i, lemma, tag in verbs:
        if tag == "VV(PP)" and not any(w.tag == "VM(FIN)" for w in clause):
            continue  # "Hast du dir brennen.md gemerkt?" asks about the past
        wanted = lemma in LEARN_VERBS or (lemma in INTO_VERBS and mine is not None)
        if not wanted or not _addressed(clause, i):
            continue
        files = [w.file for w in clause if w.file]
        if files:
            return KnowledgeRequest(kind="lernen", file=files[0])
        if lemma in INTO_VERBS:
            continue
        for j, word in enumerate(clause):
            before = clause[j - 1] if j else None
            if word.low in DOC_NOUNS and not (before is not None and before.tag == "PPOSAT"):
                described = _topic(text, clause, after=j)
                nxt = clause[j + 1] if j + 1 < len(clause) else None
                if described and nxt is not None and nxt.low in ABOUT:
                    return KnowledgeRequest(kind="lernen", query=described[:300])
    return None


def _delete(
    text: str, clause: list[_Word], verbs: list[tuple[int, str, str]]
) -> KnowledgeRequest | None:
    mine = _mine_span(clause)
    if mine is None:
        return None
    for i, lemma, _verb_tag in verbs:
        if lemma not in DELETE_VERBS or not _addressed(clause, i):
            continue
        for j, word in enumerate(clause):
            if word.low in PART_NOUNS and word.tag.startswith("N"):
                query = _topic(text, clause, after=j, skip=mine)
                if query:
                    return KnowledgeRequest(kind="loeschen", query=query[:300])
    return None


def _ask(
    text: str, sentence: list[_Word], clause: list[_Word], verbs: list[tuple[int, str, str]]
) -> KnowledgeRequest | None:
    lemmas = {lemma for _i, lemma, _t in verbs}
    if lemmas & (DELETE_VERBS | INTO_VERBS):
        return None
    mine = _mine_span(clause)
    question = _is_question(sentence)
    if mine is not None:
        lookup = any(lemma in LOOKUP_VERBS and _addressed(clause, i) for i, lemma, _t in verbs)
        if question or lookup:
            # The topic may stand in the "was du über X hast" clause of a look-up order.
            query = _topic(text, sentence, skip=_mine_span(sentence))
            if query:
                return KnowledgeRequest(kind="fragen", query=query[:300])
        return None
    # "Was hast du dir über Keramik gemerkt?": the perfect of merken/lernen, to her.
    perfect = any(
        lemma in {"merken", "lernen", "einprägen"} and tag == "VV(PP)" for _i, lemma, tag in verbs
    )
    if question and perfect and any(w.low == "du" for w in clause):
        query = _topic(text, clause)
        if query:
            return KnowledgeRequest(kind="fragen", query=query[:300])
    return None


def classify(text: str) -> KnowledgeRequest | None:
    text = text or ""
    if not _CUE.search(text):
        return None
    for sentence in _sentences(_words(text[:2000])):
        clause = _main_clause(sentence)
        if not clause or _negated(clause):
            continue
        verbs = _verb_lemmas(clause)
        found = (
            _delete(text, clause, verbs)
            or _learn(text, clause, verbs)
            or _ask(text, sentence, clause, verbs)
        )
        if found is not None:
            return found
    return None
