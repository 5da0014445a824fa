"""The router's German patterns for directive orders (seed 000 §10).

An order needs a *cue word* (nie, immer, ab jetzt, ab sofort, nicht mehr, hör auf, lass das …)
*and* a form that addresses Nova: an imperative at the start of a clause ("Sag nie …",
"Ab jetzt nenn mich …", "Siezen Sie mich"), or "du" with a modal ("du sollst/darfst nie …"),
or "dass du". Plain talk that only contains a cue word ("Ich war noch nie in Rom", "Ich gehe
immer joggen") is conversation. Rule management (list, delete, reactivate, change, undo) has
its own patterns that name rules, directives or the last change.
"""

from __future__ import annotations

import re

# du-imperatives (and their -e forms) of verbs used in behaviour rules.
IMPERATIVES = frozenset(
    "sag sage sprich nenn nenne red rede erwähn erwähne erwaehne frag frage sieze siez duze duz "
    "schreib schreibe antworte antwort benutz benutze verwende verwend gib lass hör höre hoer "
    "mach sei vermeide vermeid nutz nutze erzähl erzähle bring bringe ruf sprich benenne "
    "formulier formuliere halt halte bleib bleibe hör unterlass unterlasse gebrauch gebrauche "
    "zitier zitiere wiederhol wiederhole fang fange sprech sprecht stell stelle vergiss "
    "lösch lösche loesch loesche entfern entferne streich streiche änder ändere aender aendere "
    "heb hebe hol hole aktivier aktiviere reaktivier reaktiviere zeig zeige ergänz ergänze "
    "ergaenze erweitere erweiter".split()
)
# Words that may stand before the imperative in its clause ("Ab jetzt nenn mich Boss").
_LEAD_WORDS = frozenset(
    "bitte aber und also dann jetzt ab sofort von nun an künftig kuenftig zukünftig in zukunft "
    "nova hey hallo ok okay ja nein doch und übrigens uebrigens nochmal einmal bitteschön".split()
)
_MODALS = frozenset(
    "sollst darfst musst kannst könntest koenntest würdest wuerdest wirst solltest".split()
)
_CUE_RE = re.compile(
    r"\b(nie|niemals|nimmer|immer|stets|ab jetzt|ab sofort|von jetzt an|von nun an|künftig|"
    r"kuenftig|in zukunft|nicht mehr|nie mehr|nie wieder|keine? \w+ mehr|kein \w+ mehr)\b",
    re.IGNORECASE,
)
# Bans that are orders on their own (seed 000 §10: "hör auf", "lass das").
_BAN_RE = re.compile(
    r"^(?:\W*(?:bitte|nova|aber|und)\W+)*(hör|höre|hoer)\s+(?:bitte\s+|doch\s+|sofort\s+)*auf\b"
    r"|^(?:\W*(?:bitte|nova|aber|und)\W+)*lass\s+(?:bitte\s+|doch\s+)*(das|es|die|diese|dieses)\b",
    re.IGNORECASE,
)
# Verbs that are a rule by themselves ("Sieze mich", "Duz mich bitte").
_FORM_RE = re.compile(
    r"\b(siez\w*|duz\w*)\b.*\b(mich|uns)\b|\b(mich|uns)\s+(?:\w+\s+){0,3}?(siez\w*|duz\w*)\b",
    re.IGNORECASE,
)
_SIE_IMPERATIVE_RE = re.compile(r"^(\w+en)\s+sie\b", re.IGNORECASE)

_READ_RE = re.compile(
    r"\b(welche|was für|was sind|zeig\w*|liste\w*|nenn\w*)\b.*\b(regeln|direktiven|anweisungen|"
    r"verbote)\b.*\b(du|dir|dich|deine|meine|ich|mir|mich)\b"
    r"|\b(welche|was für|was sind|zeig\w*|liste\w*)\b.*\b(meine|deine)\s+"
    r"(regeln|direktiven|anweisungen)\b",
    re.IGNORECASE,
)
# "Welche Regeln gelten?" names no person, but nothing else than Nova's rules can be meant when
# the question ends there or asks for "dich"/"gerade" ("… beim Schach?" is a question about chess).
_READ_BARE_RE = re.compile(
    r"^\W*(?:und\s+|also\s+|nova\W+)?(?:welche|was\s+für|was\s+fuer|wie\s+viele)\s+"
    r"(?:regeln|direktiven|anweisungen|verbote)\s+(?:gelten|gibt\s+es|hast\s+du|sind\s+aktiv|"
    r"sind\s+gespeichert|hast\s+du\s+gespeichert)"
    r"(?:\s+(?:gerade|jetzt|aktuell|noch|momentan|für\s+dich|fuer\s+dich|bei\s+dir|hier))*\W*$"
    r"|^\W*(?:bitte\s+)?(?:zeig|liste|nenn)\w*\s+(?:mir\s+)?(?:bitte\s+)?(?:alle\s+|die\s+)?"
    r"(?:regeln|direktiven|anweisungen)\b",
    re.IGNORECASE,
)
_RULE_WORD_RE = re.compile(
    r"\b(regel\w*|\w+-regel\w*|direktive\w*|\w+-direktive\w*|anweisung\w*|verbot\w*)\b",
    re.IGNORECASE,
)
_ALLOW_AGAIN_RE = re.compile(r"\bdu\s+darfst\s+(?:\w+\s+){0,3}?wieder\b", re.IGNORECASE)
_RESTORE_RE = re.compile(
    r"\b(stell|stelle|hol|hole)\b.*\bwieder\s+(her|zurück|zurueck)\b|\bwiederherstell\w*\b",
    re.IGNORECASE,
)
_UNDO_RE = re.compile(r"\brückgängig\b|\brueckgaengig\b", re.IGNORECASE)
# "Nimm das zurück", "Mach das rückgängig": the last change, said short (seed 000 §5 undo).
_UNDO_SHORT_RE = re.compile(
    r"^\W*(?:bitte\s+|nova\W+)?(?:nimm|nehm|nimmst\s+du)\s+(?:bitte\s+)?"
    r"(?:das|es|die\s+letzte\s+änderung|die\s+letzte\s+aenderung|die\s+änderung|den\s+letzten\s+schritt)"
    r"\s+(?:bitte\s+)?(?:wieder\s+)?(?:zurück|zurueck)\b"
    r"|^\W*(?:bitte\s+)?(?:mach|mache)\s+(?:das|es)\s+(?:bitte\s+)?(?:wieder\s+)?"
    r"(?:rückgängig|rueckgaengig)\b"
    r"|^\W*(?:rückgängig|rueckgaengig)\s*(?:machen|bitte)?\W*$",
    re.IGNORECASE,
)
# "Die Regel mit der Milch gilt nicht mehr", "Die Siez-Regel kannst du streichen".
_RULE_ENDS_RE = re.compile(
    r"\b(gilt|gelten)\s+(?:ab\s+(?:jetzt|sofort)\s+)?(?:nicht\s+mehr|nicht\s+länger|nicht\s+laenger)\b"
    r"|\b(ist|sind)\s+(?:hiermit\s+)?(?:aufgehoben|gestrichen|vorbei|erledigt)\b"
    r"|\b(?:kannst|darfst)\s+du\s+(?:\w+\s+){0,2}?(vergessen|streichen|löschen|loeschen|"
    r"entfernen|aufheben)\b",
    re.IGNORECASE,
)
# "Keine Emojis mehr, bitte." / "Nie wieder Emojis!": a ban said without a verb, as a whole
# message. Idioms about the speaker ("Keine Zeit mehr", "Keine Ahnung mehr") are chat.
_ELLIPTIC_BAN_RE = re.compile(
    r"^\W*(?:bitte\s+|und\s+|nova\W+)?(?:(?:ab\s+sofort|ab\s+jetzt|künftig)\s+)?"
    r"(?:keine?n?|nie\s+wieder|nie\s+mehr|schluss\s+mit|genug\s+mit|weg\s+mit)\s+"
    r"(?:den\s+|dem\s+|der\s+|diesen\s+)?(?P<object>[\wäöüß-]+)(?:\s+mehr)?(?:\W+bitte)?\W*$"
    r"|^\W*(?:bitte\s+)?keine?n?\s+(?P<object2>[\wäöüß-]+)\s+mehr\b[^?]*$",
    re.IGNORECASE,
)
_IDIOM_OBJECTS = frozenset(
    "ahnung zeit lust kraft kräfte geld nerven energie idee sorge sorgen angst problem "
    "problemchen plan hoffnung chance wunder witz scherz".split()
)
# "Ab sofort bitte auf Englisch antworten": an infinitive order with a cue word of time.
_INFINITIVE_ORDER_RE = re.compile(
    r"^\W*(?:bitte\s+|nova\W+)?(?:ab\s+sofort|ab\s+jetzt|von\s+jetzt\s+an|von\s+nun\s+an|"
    r"künftig|kuenftig|in\s+zukunft|immer|nie|niemals|nie\s+wieder|nicht\s+mehr)\b"
    r"(?:\s+[\wäöüß-]+){0,6}?\s+(antworten|schreiben|sprechen|reden|siezen|duzen|antworten|"
    r"formulieren|verwenden|benutzen|nennen|erwähnen|erwaehnen|fragen|grüßen|gruessen)\W*$",
    re.IGNORECASE,
)
# "Nenn mich lieber Chef", "Sag einfach Anna zu mir": how the person wants to be called, as a
# whole message ("Nenn mich verrückt, aber …" is a figure of speech, not a name).
_NAMING_ORDER_RE = re.compile(
    r"^\W*(?:bitte\s+|nova\W+|und\s+)?(?:nenn|nenne)\s+mich\s+(?:bitte\s+|lieber\s+|einfach\s+|"
    r"doch\s+|ruhig\s+|ab\s+jetzt\s+|ab\s+sofort\s+|künftig\s+|nur\s+noch\s+)*"
    r"(?P<name>[\wäöüßÄÖÜ-]+)(?:\s+bitte)?\W*$"
    r"|^\W*(?:bitte\s+)?(?:sag|sage)\s+(?:bitte\s+|lieber\s+|einfach\s+|doch\s+|ruhig\s+)*"
    r"(?P<name2>[\wäöüßÄÖÜ-]+)\s+zu\s+mir\W*$",
    re.IGNORECASE,
)
_FIGURES = frozenset("verrückt verrueckt altmodisch naiv komisch spießig spiessig".split())
_SPEAKER_RE = re.compile(r"\b(ich|wir)\b", re.IGNORECASE)
_CLAUSE_SPLIT_RE = re.compile(r"[.,!?;:\n]+|\s[-–]\s")
_WORD_RE = re.compile(r"[\wäöüßÄÖÜ']+")


def _imperative_clause(clause: str) -> bool:
    words = [w.lower() for w in _WORD_RE.findall(clause)]
    for i, word in enumerate(words):
        if word in _LEAD_WORDS:
            continue
        if word in IMPERATIVES:
            nxt = words[i + 1] if i + 1 < len(words) else ""
            # "Lass uns immer zusammen kochen" is a suggestion, not a rule for Nova.
            return not (word == "lass" and nxt in {"uns", "mich"})
        return bool(_SIE_IMPERATIVE_RE.match(" ".join(words[i:])))
    return False


def _addresses_nova(text: str) -> bool:
    words = [w.lower() for w in _WORD_RE.findall(text)]
    for i, word in enumerate(words):
        if word == "du" and (
            (i + 1 < len(words) and words[i + 1] in _MODALS)
            or (i > 0 and words[i - 1] in _MODALS)
            or (i > 0 and words[i - 1] == "dass")
        ):
            return True
    return any(_imperative_clause(clause) for clause in _CLAUSE_SPLIT_RE.split(text))


def is_read(text: str) -> bool:
    return bool(_READ_RE.search(text) or _READ_BARE_RE.search(text.strip()))


def is_undo(text: str) -> bool:
    if _UNDO_SHORT_RE.search(text.strip()):
        return True
    return bool(_UNDO_RE.search(text)) and bool(
        re.search(r"\b(mach\w*|änderung|aenderung|letzte\w*)\b", text, re.IGNORECASE)
    )


def ends_rule(text: str) -> bool:
    """ "Die Regel mit der Milch gilt nicht mehr": a named rule is lifted (delete)."""
    return bool(_RULE_WORD_RE.search(text) and _RULE_ENDS_RE.search(text))


def elliptic_ban(text: str) -> bool:
    """ "Keine Emojis mehr, bitte.": a verbless ban of a thing, not an idiom about oneself."""
    match = _ELLIPTIC_BAN_RE.search(text.strip())
    if match is None or _SPEAKER_RE.search(text):
        return False
    word = (match.group("object") or match.group("object2") or "").lower()
    return word not in _IDIOM_OBJECTS


def naming_order(text: str) -> bool:
    """ "Nenn mich lieber Chef": a form of address, said as the whole message."""
    match = _NAMING_ORDER_RE.search(text.strip())
    if match is None:
        return False
    name = (match.group("name") or match.group("name2") or "").lower()
    return name not in _FIGURES


def infinitive_order(text: str) -> bool:
    """ "Ab sofort bitte auf Englisch antworten": a time cue and an infinitive, no speaker."""
    return bool(_INFINITIVE_ORDER_RE.search(text.strip())) and not _SPEAKER_RE.search(text)


def detect(text: str) -> bool:
    """Is this message an order about the person's directives? (router, seed 000 §10)"""
    if not text or len(text) > 2000:
        return False
    if is_read(text) or is_undo(text) or _ALLOW_AGAIN_RE.search(text):
        return True
    if ends_rule(text) or elliptic_ban(text) or infinitive_order(text) or naming_order(text):
        return True
    if _RULE_WORD_RE.search(text) and _addresses_nova(text):
        return True
    if _RESTORE_RE.search(text) and re.search(r"\b(sie|die|regel\w*)\b", text, re.IGNORECASE):
        return True
    if _BAN_RE.search(text.strip()):
        return True
    if _FORM_RE.search(text) and _addresses_nova(text):
        return True
    return bool(_CUE_RE.search(text)) and _addresses_nova(text)
