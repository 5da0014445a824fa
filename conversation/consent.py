"""The one consent reader behind every confirmation gate (seed 000 §3, "Die Deutung").

Pure Python on purpose: no Django import, so every gate (directives, files, knowledge) and the
benchmark can use it, and its tests need no database.

The grammar is closed: only an answer that *consists of* consent executes. Refusal is read
first and wins. Everything else, including every word or sign these sets do not know, is
``unclear`` and costs a second question, never an execution (seed 000 §3: "Ein Wort, das die
Mengen nicht kennen, kostet eine zweite Frage, nie eine Ausführung").

Public API:
    read_answer(text, kind=QuestionKind.YES_NO) -> Reading
    read_correction(text) -> str | None
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from conversation.vocabulary import ConsentOutcome, QuestionKind

__all__ = [
    "ASKING_VERBS",
    "CLAUSE_SEPARATORS",
    "CONSENT_PHRASES",
    "CONSENT_WITH_IST",
    "WHOLE_CONSENTS",
    "CONSENT_WORDS",
    "DROPPED_SIGNS",
    "FILLER_WORDS",
    "IMPERATIVE_SUBJECTS",
    "IMPERATIVE_VERBS",
    "NON_REFUSING_WORDS",
    "POSITIVE_EMOJI",
    "REFUSAL_STEMS",
    "REFUSAL_WORDS",
    "SUBJECT_WORDS",
    "Reading",
    "read_answer",
    "read_correction",
]


@dataclass(frozen=True, slots=True)
class Reading:
    """What an answer to a confirmation question means.

    ``reason`` is a short machine-readable English tag for the pipeline log, e.g.
    ``refusal_stem:nein``, ``sign:?``, ``word_not_consent:morgen``. ``correction`` is set only
    when the answer consents *with* a corrected wording (see ``read_correction``); such an
    answer is never consent: the gate must ask again with the new wording.
    """

    outcome: ConsentOutcome
    reason: str
    correction: str | None = None

    @property
    def is_consent(self) -> bool:
        return self.outcome == ConsentOutcome.CONSENT

    @property
    def is_refusal(self) -> bool:
        return self.outcome == ConsentOutcome.REFUSAL


# --------------------------------------------------------------------------------------------
# Closed sets
# --------------------------------------------------------------------------------------------

# seed 000 §3 point 1: refusal stems, searched as substrings of every word that is not a
# consent word. Added beyond the seed: "vergiss" ("ja, vergiss es" was ABLEHNUNG-OHNE-STAMM),
# "nö" (colloquial no), "nie" (never), "nich" (colloquial nicht), "cancel". A stem that also
# hits harmless words ("Linie", "nötig") only causes a false refusal, which executes nothing.
# Sorted longest first so the reason names the most specific stem ("nein", not "ne").
REFUSAL_STEMS: tuple[str, ...] = tuple(
    sorted(
        "nein ne nee nicht nich kein lass abbruch abbrech stopp stop vergiss cancel nö nie".split(),
        key=lambda stem: (-len(stem), stem),
    )
)

# Refusals that are too short or too common to search as substrings ("no" is in "noch",
# "nä" in "nächste"): matched as whole words only.
REFUSAL_WORDS: frozenset[str] = frozenset({"no", "nope", "nah", "nä", "nix"})

# The substring search for "ne" is very wide: articles, possessives and pronouns contain it.
# These exact words never refuse, so they are taken out of the stem search; that turns
# "ja, eine Frage" from a false refusal into a second question. None of them is a consent
# word, and only "ihnen" is a filler, so removing them from the search can never make an
# answer consent. "keine"/"keiner" are deliberately absent: they are refusals.
NON_REFUSING_WORDS: frozenset[str] = frozenset(
    "eine einen einem einer eines meine meinen meinem meiner meines deine deinen deinem deiner "
    "deines seine seinen seinem seiner seines ihnen denen jene jenen jener jenes".split()
)

# seed 000 §3 point 3(a): consent words, matched as whole words only ("ja" never hits "Jahr").
# Deliberately absent: "gut" (seed: "gut" alone is an acknowledgement, see "gut, ja" below),
# "super"/"toll"/"prima" (often ironic), "logo" (also a noun), "schon" ("passt schon" and
# "schon gut" also mean "leave it"), "doch" (a filler particle per seed), "bitte" (filler:
# "Bitte?" / "Wie bitte" ask back), "machen" ("machen wir das" is a question form),
# "sicher" alone ("sicher ist sicher" is an idiom, "Sicher" alone often means "are you
# sure"; only the phrase "na sicher" consents), "bestätige" (also "confirm it [to me]").
# "mach"/"mach's"/"machs" are the imperative of consent ("Ja, mach das"); see
# IMPERATIVE_SUBJECTS for "mach ich das".
# Added for issue 28 (plain consents that were asked again): "richtig", "korrekt", "exakt",
# "stimmt" (confirming), "absolut", "definitiv", "jawoll", "klaro". None holds a refusal
# stem; the grammar around them is unchanged, so "richtig?" (a sign), "nicht richtig" and
# "absolut nicht" (refusal first), "korrekt wäre …" (a word that is not consent), "stimmt
# das" (question word order) and "das ist absolut" (predicative) still never consent.
CONSENT_WORDS: frozenset[str] = frozenset(
    "ja jawohl jap jep jup yes ok okay okey oki gerne gern meinetwegen passt klar natürlich "
    "genau einverstanden unbedingt selbstverständlich freilich bestätigt mach mach's machs "
    "richtig korrekt exakt stimmt absolut definitiv jawoll klaro".split()
)

# seed 000 §3 point 3(b): fillers may stand next to consent but never make it. Articles,
# pronouns, the auxiliary "ist", particles that do not hesitate, and thanks/please.
# Never here (seed): nouns, numbers, question words, restriction or postponement ("aber",
# "sondern", "statt", "erst", "nur", "noch", "lieber", "später", "morgen") and "na", "nun",
# "also". Not here either: indefinite articles other than "ein" ("ja, eine" is more likely a
# message sent too early than an answer), possessives, and — stricter than the seed — "sehr":
# as a free filler it turns consent adverbs into adjectives ("sehr genau" = very exact,
# "sehr klar" = very clear), so it only stands in the phrases "sehr gerne" / "sehr gern".
FILLER_WORDS: frozenset[str] = frozenset(
    # articles
    "der die das den dem des ein "
    # pronouns
    "ich du er sie es wir ihr man mir dir mich dich uns euch ihnen "
    "dies diese dieses dieser diesen diesem "
    # the auxiliary
    "ist "
    # particles that do not hesitate ("sehr" only inside the phrase "sehr gerne", below)
    "mal doch ruhig "
    # thanks and please
    "danke dankeschön bitte "
    # issue 28: colloquial "jo" stands next to consent ("jo passt", "jo gerne") but, alone,
    # stays a second question as before ("jo" may as well be a greeting or "yo")
    "jo".split()
)

# Beyond the seed (its "Grenzen": "na klar", "gut, ja", "auf jeden Fall" cost a second
# question): multi-word consents as a closed set of exact word sequences. A phrase counts as
# one consent word; every other word of the answer is still checked. Between the words of a
# phrase only ASCII whitespace and at most one comma may stand ("na, klar", "gut, ja").
# Why each is safe: none contains a restriction, postponement or hesitation once complete;
# "na" and "gut" stay excluded on their own, so "na ja", "naja", "na gut", "ja gut" and "gut"
# still ask again. "von mir aus" is the spelled-out "meinetwegen" (a seed consent word);
# "ich bin einverstanden" / "ich stimme zu" are the full-sentence consents, closed here as
# whole phrases so that "bin" and "stimme" never become fillers ("bin ich einverstanden"
# does not match a phrase and asks again). Deliberately absent: "aber gerne" ("aber"
# restricts, and a rare phrase is not worth a hole next to it), "passt schon" / "schon gut"
# (also mean "leave it"), "kein Problem" (contains the refusal stem "kein"; refusal first).
CONSENT_PHRASES: tuple[tuple[str, ...], ...] = tuple(
    sorted(
        {
            ("auf", "jeden", "fall"),
            ("na", "klar"),
            ("na", "sicher"),
            ("alles", "klar"),
            ("in", "ordnung"),
            ("geht", "klar"),
            ("geht", "in", "ordnung"),
            ("gut", "ja"),
            ("sehr", "gerne"),
            ("sehr", "gern"),
            ("von", "mir", "aus"),
            ("bin", "einverstanden"),
            ("ich", "bin", "einverstanden"),
            ("stimme", "zu"),
            ("ich", "stimme", "zu"),
        },
        key=lambda phrase: (-len(phrase), phrase),
    )
)

# Beyond the seed ("sicher", "passt so" and their like): plain consents whose words
# are not consent words on their own, accepted only as the WHOLE answer (words in this order,
# nothing else but the signs of DROPPED_SIGNS). "sicher" stays out of CONSENT_WORDS ("ja
# sicher", "sicher ist sicher" and "bist du sicher" still ask again), and "so" never becomes a
# filler: "passt das so" and "passt schon" still ask. Refusal is read first, as always.
WHOLE_CONSENTS: frozenset[str] = frozenset(
    {
        "sicher",
        "sicher doch",
        "ja sicher",  # issue 28: a plain consent people say; "ja sicher nicht" still refuses
        "ja sicher doch",
        "aber sicher",
        "ganz sicher",
        "passt so",
        "das passt so",
        "so passt es",
        "so passt das",
        "passt so danke",
        "klingt gut",
        "das klingt gut",
        "hört sich gut an",
        "mach es so",
        "mach das so",
        "genau so",
        "ja genau so",
        "richtig so",
        "so ist es richtig",
        "passt perfekt",
        "perfekt so",
        # issue 28: the same with a leading yes ("so" stays no filler)
        "ja passt so",
        "jo passt so",
        "ja das passt so",
        "ja klingt gut",
        "ja mach es so",
        "ja mach das so",
        "ja richtig so",
    }
)

# seed 000 §3 point 3(d): an asking verb before a subject word in the same clause is a
# question ("ist das ok", "passt es"). Only "ist" and "passt" can occur in an otherwise
# consenting answer; the others are listed so the rule still holds if the sets grow.
ASKING_VERBS: frozenset[str] = frozenset(
    "ist passt geht klappt stimmt stimme gilt soll sollst sollen kann kannst können darf darfst "
    "dürfen will willst wollen machst macht machen hast hat haben bist bin sind seid wird wirst "
    "werden wäre war".split()
)

# seed 000 §3 point 3(d), verbatim.
SUBJECT_WORDS: frozenset[str] = frozenset(
    "der die das ein ich du er sie es wir ihr man dies diese dieses dieser".split()
)

# Beyond the seed: the auxiliary "ist" turns a consent word into a predicate adjective with
# another meaning: "ist klar" (understood / ironic "yeah right"), "ist mir klar" (I know),
# "das ist natürlich" (that is natural), "ist genau". In a clause with "ist", only these
# consents keep their meaning ("das ist ok", "ja das ist in Ordnung", "ist gut, ja");
# every other consent word there asks again.
CONSENT_WITH_IST: frozenset[str] = frozenset(
    {"ja", "jawohl", "jap", "jep", "jup", "yes", "ok", "okay", "okey", "oki", "in ordnung"}
    | {"gut ja"}
    # issue 28: "das ist richtig" / "ist korrekt" keep their confirming meaning next to "ist"
    | {"richtig", "korrekt"}
)

# Beyond the seed (its "Grenzen": "mach ich das" consented): the imperative of consent has no
# subject. "mach" next to a personal subject in the same clause is either a question
# ("mach ich das") or "I'll do it myself" ("ich mach das") — both ask again. "du" stays
# allowed ("mach du das" is an emphatic imperative); "es"/"das" are objects ("mach es").
IMPERATIVE_VERBS: frozenset[str] = frozenset({"mach", "mach's", "machs"})
IMPERATIVE_SUBJECTS: frozenset[str] = frozenset({"ich", "er", "sie", "wir", "ihr", "man"})

# seed 000 §3 point 3(c): the only signs an answer may contain besides letters, digits and
# the apostrophe. Anything else — every question mark of every script, emoji, symbols,
# non-ASCII whitespace and dashes — makes the answer unclear.
ASCII_WHITESPACE: frozenset[str] = frozenset(" \t\n\r\x0b\x0c")
DROPPED_SIGNS: frozenset[str] = frozenset(".,!;:-()") | ASCII_WHITESPACE

# seed 000 §3 point 3(d): clauses end only here; "-", "(" and ")" do not end one, so
# "ist - das ok" and "ist (das) ok" still ask.
CLAUSE_SEPARATORS: frozenset[str] = frozenset(",.!;:")

# Beyond the seed (its "Grenzen": "ja 👍"): a closed set of unambiguously positive emoji is
# dropped like whitespace. It can never create consent on its own: the rest must still be a
# complete consent (a consent word, nothing else), so "👍" alone, "👍?" and "ist das ok 👍"
# stay unclear. Everything else (🤔 ❓ 🙄 😅 👎, ✓ …) stays a sign that asks again. Skin-tone
# modifiers are accepted after the two hand gestures only, VS16 after any of them.
_TONED_EMOJI: frozenset[str] = frozenset({"\U0001f44d", "\U0001f44c"})  # 👍 👌
POSITIVE_EMOJI: frozenset[str] = _TONED_EMOJI | {"\u2705", "\U0001f642", "\U0001f60a"}  # ✅ 🙂 😊
_POSITIVE_EMOJI_RE = re.compile(
    f"(?:[{''.join(sorted(_TONED_EMOJI))}][\U0001f3fb-\U0001f3ff]?"
    f"|[{''.join(sorted(POSITIVE_EMOJI - _TONED_EMOJI))}])\ufe0f?"
)

# Beyond the seed (its "Grenzen": "Ja…", "ja – gerne"): glyphs that phone keyboards and
# autocorrect substitute for signs the seed already accepts. Each maps to exactly the ASCII
# form the user would otherwise have typed, which the seed reads as consent ("ja...",
# "ja - gerne"), so no reading changes beyond the glyph. Deliberately *not* mapped: the Greek
# question mark U+037E (Unicode normalisation would turn it into ";", so no normalisation is
# applied at all), U+00A0 and other non-ASCII spaces, and every other dash or hyphen.
_GLYPH_MAP = str.maketrans(
    {
        "\u2026": "...",  # … horizontal ellipsis
        "\u2013": "-",  # – en dash
        "\u2014": "-",  # — em dash
        "\u2019": "'",  # ’ typographic apostrophe (iOS smart punctuation: "mach’s")
    }
)


# --------------------------------------------------------------------------------------------
# Precompiled look-ups (derived from the closed sets above; nothing here widens them)
# --------------------------------------------------------------------------------------------

# A word is a run of characters for which ``str.isalnum()`` holds, or apostrophes: ``\w``
# without the underscore is exactly ``isalnum`` in Python's ``re``.
_WORD_SPLIT_RE = re.compile(r"((?:[^\W_]|')+)")
# The first sign outside DROPPED_SIGNS (the underscore is a sign, not a word character).
_BAD_SIGN_RE = re.compile("[^\\w'" + "".join(re.escape(ch) for ch in sorted(DROPPED_SIGNS)) + "]|_")
_CLAUSE_SEPARATOR_RE = re.compile("[" + re.escape("".join(sorted(CLAUSE_SEPARATORS))) + "]")
# Where a refusal stem stands in the words joined by spaces: a stem that holds a shorter one
# ("nein" holds "ne") adds nothing to that search (the reason still names the longest, see
# _refusal). No stem holds a space, so every match lies inside one word.
_ANY_STEM_RE = re.compile(
    "|".join(
        re.escape(stem)
        for stem in REFUSAL_STEMS
        if not any(other != stem and other in stem for other in REFUSAL_STEMS)
    )
)
# Words that never start a refusal search: consent words and the non-refusing words.
_NO_STEM_SEARCH: frozenset[str] = CONSENT_WORDS | NON_REFUSING_WORDS
# Closed phrases by their first word, longest first (the order of CONSENT_PHRASES).
_PHRASES_BY_FIRST: dict[str, tuple[tuple[str, ...], ...]] = {
    first: tuple(p for p in CONSENT_PHRASES if p[0] == first)
    for first in {phrase[0] for phrase in CONSENT_PHRASES}
}
_PHRASE_FIRSTS: frozenset[str] = frozenset(_PHRASES_BY_FIRST)
_PHRASE_WORDS: frozenset[str] = frozenset(word for phrase in CONSENT_PHRASES for word in phrase)
# Words that may make up a consent without any phrase.
_PLAIN_WORDS: frozenset[str] = CONSENT_WORDS | FILLER_WORDS
# Without one of these words in a clause, none of the clause rules can fail there.
_CLAUSE_RULE_WORDS: frozenset[str] = ASKING_VERBS | IMPERATIVE_VERBS | {"ist"}
# The first word and the most words of a whole-answer consent: the words are joined and
# looked up only when both fit.
_WHOLE_CONSENT_FIRSTS: frozenset[str] = frozenset(c.split(" ")[0] for c in WHOLE_CONSENTS)
_WHOLE_CONSENT_MAX_WORDS: int = max(len(c.split(" ")) for c in WHOLE_CONSENTS)
# What a consenting answer may consist of, for the output check.
_VERIFY_WORDS: frozenset[str] = CONSENT_WORDS | FILLER_WORDS | _PHRASE_WORDS
# The glyphs of _GLYPH_MAP, and every character _normalise may change (each match of
# _POSITIVE_EMOJI_RE starts with one of POSITIVE_EMOJI): text without them stays as it is.
_GLYPHS = frozenset("\u2026\u2013\u2014\u2019")
_NORMALISED_CHARS: frozenset[str] = _GLYPHS | POSITIVE_EMOJI
_GLYPH_FORMS: tuple[tuple[str, str], ...] = tuple(
    (chr(code), str(form)) for code, form in sorted(_GLYPH_MAP.items())
)
# The words of a text without an underscore: there ``\w`` is exactly ``[^\W_]``.
_WORD_RE = re.compile(r"[\w']+")
_ASCII_WHITESPACE_CHARS = "".join(sorted(ASCII_WHITESPACE))

# The same two questions for an ASCII text as one str.translate each (much faster than the
# patterns on a long answer), each table derived from its pattern character by character:
# every character that is not a word character becomes a space, so ``str.split()`` yields the
# words of _WORD_SPLIT_RE; every character that is not a bad sign is deleted, so what is left
# are the bad signs of _BAD_SIGN_RE.
_ASCII_CHARS = [chr(code) for code in range(128)]
_ASCII_WORDS_ONLY = str.maketrans(
    {ch: " " for ch in _ASCII_CHARS if _WORD_SPLIT_RE.fullmatch(ch) is None}
)
_ASCII_BAD_SIGNS_ONLY = str.maketrans(
    {ch: None for ch in _ASCII_CHARS if _BAD_SIGN_RE.fullmatch(ch) is None}
)
# As _ASCII_WORDS_ONLY, but every clause separator becomes a comma: the clauses' words are
# then the ``split()`` of each part between commas.
_ASCII_CLAUSE_WORDS_ONLY = str.maketrans(
    {
        ch: "," if _CLAUSE_SEPARATOR_RE.fullmatch(ch) else " "
        for ch in _ASCII_CHARS
        if _WORD_SPLIT_RE.fullmatch(ch) is None
    }
)

# Enum members as module constants: an attribute look-up on an Enum class costs a call.
_YES_NO = QuestionKind.YES_NO
_CHOICE = QuestionKind.CHOICE
_REFUSAL = ConsentOutcome.REFUSAL

# Readings without a variable part, built once (a Reading is frozen, so sharing is safe).
_NOT_TEXT = Reading(ConsentOutcome.UNCLEAR, "not_text")
_EMPTY = Reading(ConsentOutcome.UNCLEAR, "empty")
_CHOICE_NEVER_CONSENTS = Reading(ConsentOutcome.UNCLEAR, "choice_never_consents")
_CONSENT = Reading(ConsentOutcome.CONSENT, "consent")
_WHOLE_CONSENT = Reading(ConsentOutcome.CONSENT, "whole_consent")
_REFUSAL_READINGS: dict[str, Reading] = {
    reason: Reading(ConsentOutcome.REFUSAL, reason)
    for reason in [f"refusal_stem:{stem}" for stem in REFUSAL_STEMS]
    + [f"refusal_word:{word}" for word in sorted(REFUSAL_WORDS)]
}
_UNCLEAR_READINGS: dict[str, Reading] = {
    reason: Reading(ConsentOutcome.UNCLEAR, reason)
    for reason in ("no_consent_word", "question_word_order", "imperative_with_subject")
}


# --------------------------------------------------------------------------------------------
# Words, signs, refusal
# --------------------------------------------------------------------------------------------


def _normalise(text: str) -> str:
    if text.isascii() or _NORMALISED_CHARS.isdisjoint(text):
        return text  # no glyph of _GLYPH_MAP and no emoji in it
    # The glyphs one after the other (what translate with _GLYPH_MAP does, but faster): each
    # becomes ASCII, which holds no other glyph.
    for glyph, ascii_form in _GLYPH_FORMS:
        if glyph in text:
            text = text.replace(glyph, ascii_form)
    if POSITIVE_EMOJI.isdisjoint(text):
        return text
    return _POSITIVE_EMOJI_RE.sub(" ", text)


def _split(normalised: str) -> list[str]:
    """The lower-cased words of normalised text, in order.

    The words are the runs of ``_WORD_SPLIT_RE``; bad signs split words like any separator, so
    refusal stems are still found around them. An ASCII text is lower-cased once as a whole
    (ASCII case mapping is per character and keeps letters letters, so the words are the
    same); any other text word by word, as ``str.lower`` depends on the context there (final
    sigma) and may change a word's length.
    """
    if normalised.isascii():
        return normalised.lower().translate(_ASCII_WORDS_ONLY).split()
    pattern = _WORD_RE if "_" not in normalised else _WORD_SPLIT_RE
    return [word.lower() for word in pattern.findall(normalised)]


def _gaps(normalised: str) -> list[str]:
    """The raw text before each word (gaps[0] is before the first; the tail is left out)."""
    # [gap, word, gap, word, …, gap]: the words at odd places, the gap before each at even.
    return _WORD_SPLIT_RE.split(normalised)[0:-1:2]


def _bad_sign(normalised: str) -> str | None:
    """The first sign outside DROPPED_SIGNS, if any."""
    if normalised.isascii() and not normalised.translate(_ASCII_BAD_SIGNS_ONLY):
        return None
    match = _BAD_SIGN_RE.search(normalised)
    return match.group() if match is not None else None


def _sign_reason(ch: str) -> str:
    # Non-ASCII signs are named by code point: U+037E looks exactly like ";" in a log.
    shown = ch if " " < ch < "\x7f" else f"U+{ord(ch):04X}"
    return f"sign:{shown}"


def _refusal(words: list[str]) -> str | None:
    """seed 000 §3 point 1: the reason of the first refusal, searched outside consent words."""
    if not REFUSAL_WORDS.isdisjoint(words):
        return _refusal_word_by_word(words)
    # No refusal word: the first word that holds a stem and is not exempt refuses. The stem
    # search runs over the joined words, from one candidate word to the next.
    joined = " ".join(words)
    match = _ANY_STEM_RE.search(joined)
    while match is not None:
        start = match.start()
        word = words[joined.count(" ", 0, start)]
        if word not in _NO_STEM_SEARCH:  # "gerne" and "meinetwegen" contain "ne" but consent
            for stem in REFUSAL_STEMS:  # longest first: the reason names the most specific
                if stem in word:
                    return f"refusal_stem:{stem}"
        end = joined.find(" ", start)
        if end < 0:
            return None
        match = _ANY_STEM_RE.search(joined, end)
    return None


def _refusal_word_by_word(words: list[str]) -> str | None:
    """_refusal, one word after the other (the order decides between a word and a stem)."""
    for word in words:
        if word in _NO_STEM_SEARCH:
            continue
        if word in REFUSAL_WORDS:
            return f"refusal_word:{word}"
        if _ANY_STEM_RE.search(word) is not None:
            for stem in REFUSAL_STEMS:
                if stem in word:
                    return f"refusal_stem:{stem}"
    return None


# --------------------------------------------------------------------------------------------
# Consent: phrases, words, clauses
# --------------------------------------------------------------------------------------------


class _Token(NamedTuple):
    text: str  # lower-cased word, or the phrase joined by spaces
    clause: int
    is_phrase: bool = False


def _phrase_gap_ok(gap: str) -> bool:
    # Two words are never adjacent without a gap, so an empty core means whitespace only;
    # a gap holds no word characters, so stripping the whitespace leaves its core.
    return gap.strip(_ASCII_WHITESPACE_CHARS) in ("", ",")


def _clauses(normalised: str, gaps: list[str]) -> list[int]:
    """The clause index of every word: how many clause separators stand before it."""
    if _CLAUSE_SEPARATOR_RE.search(normalised) is None:
        return [0] * len(gaps)
    clauses: list[int] = []
    clause = 0
    for gap in gaps:
        clause += len(_CLAUSE_SEPARATOR_RE.findall(gap))
        clauses.append(clause)
    return clauses


def _tokens(words: list[str], gaps: list[str], clauses: list[int]) -> list[_Token]:
    """Collapse closed consent phrases into one token each; keep every other word."""
    tokens: list[_Token] = []
    i = 0
    count = len(words)
    while i < count:
        for phrase in _PHRASES_BY_FIRST.get(words[i], ()):
            end = i + len(phrase)
            if tuple(words[i:end]) == phrase and all(
                _phrase_gap_ok(gaps[j]) for j in range(i + 1, end)
            ):
                tokens.append(_Token(" ".join(phrase), clauses[i], is_phrase=True))
                i = end
                break
        else:
            tokens.append(_Token(words[i], clauses[i]))
            i += 1
    return tokens


def _clause_failure(tokens: list[_Token]) -> str | None:
    """seed 000 §3 point 3(d), plus the subject-less imperative (see IMPERATIVE_SUBJECTS)
    and consent next to "ist" (see CONSENT_WITH_IST), each judged per clause."""
    by_clause: dict[int, list[_Token]] = {}
    for token in tokens:
        by_clause.setdefault(token.clause, []).append(token)
    for clause_tokens in by_clause.values():
        clause_words = [token.text for token in clause_tokens if not token.is_phrase]
        order = _word_order_failure(clause_words)
        if order is not None:
            return order
        if "ist" in clause_words:
            for token in clause_tokens:
                is_consent = token.is_phrase or token.text in CONSENT_WORDS
                if is_consent and token.text not in CONSENT_WITH_IST:
                    return f"predicative_not_consent:{token.text}"
    return None


def _word_order_failure(clause_words: list[str]) -> str | None:
    """A question (asking verb before its subject) or an order with a subject in one clause."""
    seen_asking_verb = False
    for word in clause_words:
        if seen_asking_verb and word in SUBJECT_WORDS:
            return "question_word_order"
        if word in ASKING_VERBS:
            seen_asking_verb = True
    if not IMPERATIVE_VERBS.isdisjoint(clause_words) and not IMPERATIVE_SUBJECTS.isdisjoint(
        clause_words
    ):
        return "imperative_with_subject"
    return None


def _clause_groups(normalised: str, words: list[str]) -> Iterable[list[str]]:
    """The words of each clause, in order (a clause may be empty): a clause ends at a gap with
    a clause separator."""
    if normalised.isascii():
        return map(str.split, normalised.lower().translate(_ASCII_CLAUSE_WORDS_ONLY).split(","))
    groups: list[list[str]] = []
    current: list[str] = []
    for gap, word in zip(_gaps(normalised), words, strict=True):
        if current and not CLAUSE_SEPARATORS.isdisjoint(gap):
            groups.append(current)
            current = []
        current.append(word)
    if current:
        groups.append(current)
    return groups


def _has_phrase_words(words: list[str]) -> bool:
    """Whether the words of a closed phrase stand in a row (their gaps are judged later)."""
    for i, word in enumerate(words):
        for phrase in _PHRASES_BY_FIRST.get(word, ()):
            if tuple(words[i : i + len(phrase)]) == phrase:
                return True
    return False


def _clause_words_failure(groups: Iterable[list[str]]) -> str | None:
    """_clause_failure for clauses without a phrase, each given by its words."""
    for clause_words in groups:
        if _CLAUSE_RULE_WORDS.isdisjoint(clause_words):
            continue  # also every empty clause
        order = _word_order_failure(clause_words)
        if order is not None:
            return order
        if "ist" in clause_words:
            for word in clause_words:
                if word in CONSENT_WORDS and word not in CONSENT_WITH_IST:
                    return f"predicative_not_consent:{word}"
    return None


def _consent_failure(normalised: str, words: list[str], bad_sign: str | None) -> str | None:
    """None when the answer consists of consent (seed 000 §3 point 3), else why not.

    Precondition: the refusal search already ran and found nothing.
    """
    if bad_sign is not None:
        return _sign_reason(bad_sign)
    if _PHRASE_FIRSTS.isdisjoint(words) or not _has_phrase_words(words):
        # No phrase can match: every word is its own token.
        if not _PLAIN_WORDS.issuperset(words):
            for word in words:
                if word not in _PLAIN_WORDS:
                    return f"word_not_consent:{word}"
        if CONSENT_WORDS.isdisjoint(words):
            return "no_consent_word"
        if _CLAUSE_RULE_WORDS.isdisjoint(words):
            return None
        if _CLAUSE_SEPARATOR_RE.search(normalised) is None:
            return _clause_words_failure([words])
        return _clause_words_failure(_clause_groups(normalised, words))
    gaps = _gaps(normalised)
    tokens = _tokens(words, gaps, _clauses(normalised, gaps))
    has_consent = False
    for token in tokens:
        if token.is_phrase or token.text in CONSENT_WORDS:
            has_consent = True
        elif token.text not in FILLER_WORDS:
            return f"word_not_consent:{token.text}"
    if not has_consent:
        return "no_consent_word"
    return _clause_failure(tokens)


def _not_complete_consent(text: str) -> str | None:
    """Why a raw text is not a complete consent (refusal, sign, word, order), or None."""
    normalised = _normalise(text)
    words = _split(normalised)
    refusal = _refusal(words)
    if refusal is not None:
        return refusal
    return _consent_failure(normalised, words, _bad_sign(normalised))


# --------------------------------------------------------------------------------------------
# Correction at the gate (beyond the seed)
# --------------------------------------------------------------------------------------------

# Quoted wording: ASCII double and single quotes, German „…“ ‚…‘, English “…” ‘…’, and
# guillemets both ways. An ASCII single quote opens only outside a word, so the apostrophe in
# "nenn's" is not read as a quote.
_QUOTE_RE = re.compile(
    r'"(?P<a>[^"]+)"'
    r"|\u201e(?P<b>[^\u201c\u201d\"]+)[\u201c\u201d\"]"
    r"|\u201c(?P<c>[^\u201d]+)\u201d"
    r"|\u201a(?P<d>[^\u2018\u2019']+)[\u2018\u2019']"
    r"|\u2018(?P<e>[^\u2019]+)\u2019"
    r"|\u00ab(?P<f>[^\u00bb]+)\u00bb"
    r"|\u00bb(?P<g>[^\u00ab]+)\u00ab"
    r"|(?<![\w'])'(?P<h>[^']+)'(?!\w)"
)
_QUOTE_CHARS = frozenset("\"'\u201e\u201c\u201d\u201a\u2018\u2019\u00ab\u00bb")
_APOSTROPHE_IN_WORD_RE = re.compile(r"(?<=\w)['\u2019](?=\w)")
_ABER_RE = re.compile(r"\baber\b", re.IGNORECASE)
# A quote right after one of these names the wording to replace, not the new one.
_OLD_WORDING_MARKER_RE = re.compile(
    r"(?:\b(?:an)?statt|\banstelle(?:\s+von)?|\bnicht|\binstead\s+of)\s*$", re.IGNORECASE
)
# The instruction after "aber" is a closed grammar too: words of saying/naming, pronouns,
# and the markers of replacement. Any other word ("lass 'X' weg", "streich 'X'") means the
# quote may be a wording to remove, so no correction is read and the gate asks again.
_INSTRUCTION_WORDS: frozenset[str] = frozenset(
    # saying and naming
    "sag sage schreib schreibe nenn nenne nenn's nimm verwende benutz benutze formulier "
    "formuliere soll sollte heißen heißt lautet lauten "
    # pronouns, articles and particles
    "es das sie ihn die den der lieber bitte doch mal einfach "
    # markers of replacement
    "statt anstatt anstelle von stattdessen sondern und "
    # the same in English
    "say write call use it instead of".split()
)


def _parse_correction(text: str, aber: re.Match[str] | None) -> str | None:
    """The correction, given the first match of ``_ABER_RE`` in ``text`` (None: none)."""
    if aber is None:
        return None
    prefix, instruction = text[: aber.start()], text[aber.end() :]
    if _QUOTE_CHARS.isdisjoint(instruction):
        return None  # every quote starts with one of these: no quoted wording at all
    # The part before "aber" must itself be a complete consent ("ja", "ok gerne").
    if _not_complete_consent(prefix) is not None:
        return None

    candidates: list[str] = []
    residue: list[str] = []
    last = 0
    for quote in _QUOTE_RE.finditer(instruction):
        before = instruction[last : quote.start()]
        # One named group per kind of quote, and only the matching one takes part.
        wording = quote.group(quote.lastgroup or 0).strip()
        marker = _OLD_WORDING_MARKER_RE.search(before)
        if marker is not None:
            # The marker belongs to the old wording; "nicht" here is not a refusal.
            residue.append(before[: marker.start()])
        else:
            residue.append(before)
            if wording:
                candidates.append(wording)
        residue.append(" ")
        last = quote.end()
    residue.append(instruction[last:])
    if len(candidates) != 1:
        return None

    rest = "".join(residue)
    if not _QUOTE_CHARS.isdisjoint(_APOSTROPHE_IN_WORD_RE.sub("", rest)):
        return None  # an unmatched quote: the wording is not readable
    rest_normalised = _normalise(rest)
    if _bad_sign(rest_normalised) is not None:
        return None
    # Every word outside the quotes must belong to the closed instruction grammar. This also
    # keeps refusal first: no instruction word refuses, so any refusal outside the quotes
    # ("lass 'X' weg", "nein, nenn es 'X'") ends the correction and the refusal is read. The
    # stem search itself is not run here: "nenn" contains "ne" but names, it does not refuse.
    rest_words = _split(rest_normalised)
    if not _INSTRUCTION_WORDS.issuperset(rest_words):
        return None
    return candidates[0]


def read_correction(text: str) -> str | None:
    """The corrected wording in an answer like ``ja, aber sag 'Boss' statt 'Chef'``.

    Returns the one new wording when the answer is a complete consent, then "aber", then an
    instruction of a closed grammar (say/write/name …, optional "statt/anstatt/nicht 'old'")
    with exactly one quoted new wording; otherwise None. Never a reason to execute:
    ``read_answer`` reports such an answer as unclear with reason ``correction``.
    """
    if not isinstance(text, str):
        return None
    return _parse_correction(text, _ABER_RE.search(text))


# --------------------------------------------------------------------------------------------
# The reader
# --------------------------------------------------------------------------------------------


def read_answer(text: str, kind: QuestionKind = QuestionKind.YES_NO) -> Reading:
    """Read the answer to a confirmation question (seed 000 §3, "Die Deutung").

    ``kind`` is ``"yes_no"`` (may consent) or ``"choice"`` (never consents: seed 000 §3, a
    choice is not read from the answer). Order: empty, correction, refusal (wins), choice,
    signs, words, word order. Only ``outcome == "consent"`` may execute anything.
    """
    if kind.__class__ is not QuestionKind:
        kind = QuestionKind(kind)  # an unknown kind raises ValueError here
    if not isinstance(text, str):
        return _NOT_TEXT
    if text.isascii():
        # Most answers are one closed-set unit ("ja", "Nein!", "na klar"): one look-up in a
        # table that _read itself filled at import (see _short_answers).
        short = _SHORT_ANSWERS.get(text.strip(_EDGE_SIGNS).lower())
        if short is not None:
            if kind is _YES_NO or short.outcome is _REFUSAL:
                return short
            return _CHOICE_NEVER_CONSENTS
    if not text.strip():
        return _EMPTY
    return _read(text, kind)


def _read(text: str, kind: QuestionKind) -> Reading:
    """read_answer for a text that is not empty, without the short-answer table."""
    if kind is _YES_NO:
        aber = _ABER_RE.search(text)
        if aber is not None:
            correction = _parse_correction(text, aber)
            if correction is not None:
                return Reading(ConsentOutcome.UNCLEAR, "correction", correction)

    if text.isascii():  # _normalise, _split and _bad_sign for ASCII, without the calls
        normalised = text
        words = text.lower().translate(_ASCII_WORDS_ONLY).split()
    else:
        normalised = _normalise(text)
        words = _split(normalised)
    refusal = _refusal(words)
    if refusal is not None:
        return _REFUSAL_READINGS[refusal]
    if kind is _CHOICE:
        return _CHOICE_NEVER_CONSENTS

    if normalised.isascii() and not normalised.translate(_ASCII_BAD_SIGNS_ONLY):
        bad = None
    else:
        bad = _bad_sign(normalised)
    if (
        bad is None
        and words
        and words[0] in _WHOLE_CONSENT_FIRSTS
        and len(words) <= _WHOLE_CONSENT_MAX_WORDS
        and " ".join(words) in WHOLE_CONSENTS
    ):
        _verify_whole_consent(text)
        return _WHOLE_CONSENT
    failure = _consent_failure(normalised, words, bad)
    if failure is not None:
        return _UNCLEAR_READINGS.get(failure) or Reading(ConsentOutcome.UNCLEAR, failure)
    _verify_consent(text)
    return _CONSENT


# The output checks split words their own way (``\w``, apostrophe), independent of _split.
_VERIFY_WORD_RE = re.compile(r"[\w']+")
# The words of _VERIFY_WORDS the output check lets through (no refusal in them).
_VERIFY_PASSES: frozenset[str] = frozenset(
    word
    for word in _VERIFY_WORDS
    if word in _NO_STEM_SEARCH
    or not (word in REFUSAL_WORDS or any(stem in word for stem in REFUSAL_STEMS))
)


def _verified_words(text: str) -> list[str]:
    """The output checks' own reading of the raw text: RuntimeError for a sign, else the
    lower-cased words."""
    normalised = _normalise(text)
    if not normalised.isascii() or normalised.translate(_ASCII_BAD_SIGNS_ONLY):
        sign = _BAD_SIGN_RE.search(normalised)
        if sign is not None:
            raise RuntimeError(f"consent with a sign: {sign.group()!r}")
    lowered = normalised.lower()
    if lowered.isascii():
        # No sign, so no underscore: the runs of \w and apostrophes are the translated words.
        return lowered.translate(_ASCII_WORDS_ONLY).split()
    return _VERIFY_WORD_RE.findall(lowered)


def _verify_whole_consent(text: str) -> None:
    """The output check of a whole-answer consent, re-derived from the raw text."""
    words = _verified_words(text)
    if " ".join(words) not in WHOLE_CONSENTS:
        raise RuntimeError("whole consent that is not in the closed set")
    if _refusal(words) is not None:
        raise RuntimeError("whole consent with a refusal")


def _verify_consent(text: str) -> None:
    """Independent output check before anything may execute (seed 000 §3, the seed's
    "Ausgabe-Verifikation"): re-derived from the raw text, raises instead of consenting."""
    words = _verified_words(text)
    if not words:
        raise RuntimeError("consent without words")
    if _VERIFY_PASSES.issuperset(words):
        return
    for word in words:
        if word not in _VERIFY_WORDS:
            raise RuntimeError(f"consent with a foreign word: {word!r}")
        if word not in _VERIFY_PASSES:
            raise RuntimeError(f"consent with a refusal: {word!r}")


# --------------------------------------------------------------------------------------------
# Short answers: one dict look-up
# --------------------------------------------------------------------------------------------

# Signs that may stand around a short answer: the dropped signs change no reading at the edges
# of an answer (no word, no phrase gap, the clauses keep their grouping).
_EDGE_SIGNS = "".join(sorted(DROPPED_SIGNS))


def _short_answers() -> dict[str, Reading]:
    """The yes/no reading of every single unit of the closed sets, as the whole answer.

    Computed at import by the reader itself (``_read``), so the table cannot drift from the
    sets or the rules. ``read_answer`` looks an ASCII answer up here after stripping
    ``_EDGE_SIGNS`` and lower-casing it, which changes no reading of an ASCII answer: case
    only changes letters, which are read lower-cased, and only a quoted correction keeps
    case, which needs "aber" (no key holds it).
    """
    units = (
        CONSENT_WORDS
        | FILLER_WORDS
        | NON_REFUSING_WORDS
        | REFUSAL_WORDS
        | frozenset(REFUSAL_STEMS)
        | frozenset(" ".join(phrase) for phrase in CONSENT_PHRASES)
        | WHOLE_CONSENTS
    )
    return {
        unit: _read(unit, QuestionKind.YES_NO)
        for unit in sorted(units)
        if unit.isascii()
        and unit == unit.lower().strip(_EDGE_SIGNS)
        and _ABER_RE.search(unit) is None
    }


_SHORT_ANSWERS: dict[str, Reading] = _short_answers()
