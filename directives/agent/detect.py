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
    "heb hebe hol hole aktivier aktiviere reaktivier reaktiviere zeig zeige".split()
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
_FORM_RE = re.compile(r"\b(siez\w*|duz\w*)\b.*\b(mich|uns)\b", re.IGNORECASE)
_SIE_IMPERATIVE_RE = re.compile(r"^(\w+en)\s+sie\b", re.IGNORECASE)

_READ_RE = re.compile(
    r"\b(welche|was für|was sind|zeig\w*|liste\w*|nenn\w*)\b.*\b(regeln|direktiven|anweisungen|"
    r"verbote)\b.*\b(du|dir|dich|deine|meine|ich|mir|mich)\b"
    r"|\b(welche|was für|was sind|zeig\w*|liste\w*)\b.*\b(meine|deine)\s+"
    r"(regeln|direktiven|anweisungen)\b",
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
    return bool(_READ_RE.search(text))


def is_undo(text: str) -> bool:
    return bool(_UNDO_RE.search(text)) and bool(
        re.search(r"\b(mach\w*|änderung|aenderung|letzte\w*)\b", text, re.IGNORECASE)
    )


def detect(text: str) -> bool:
    """Is this message an order about the person's directives? (router, seed 000 §10)"""
    if not text or len(text) > 2000:
        return False
    if is_read(text) or is_undo(text) or _ALLOW_AGAIN_RE.search(text):
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
