"""Tribunal: checks Nova's reply against the person's directives (seed 000 §8.3).

Hierarchy: ethics/psyche/law > directives > character. The check runs through the gateway
(purpose ``directives.tribunal``, JSON) and its answer is read by a checked reader; the offline
handler does simple checks: forbidden words from "Sprich nie von X" / "Sag nie X" / "Nenn mich
nie X", and du/Sie when a directive demands Siezen (or Duzen).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User

from conversation.address import has_du, has_formal_sie
from conversation.vocabulary import CheckOutcome, ModelFault, NodeOutcome
from directives.selectors import block_rows
from novaberg import llm
from novaberg.llm import get_gateway
from novaberg.parsers import loads_checked

logger = logging.getLogger(__name__)

PURPOSE = "directives.tribunal"
# Outcomes of this check beside the shared CheckOutcome words.
NO_DIRECTIVES = "keine_direktiven"
ETHICS_FIRST = "ethik_vorrang"

PROMPT = """Der Nutzer hat folgende Direktiven (Verhaltensvertrag) erteilt:
{directives}
Pruefe ob die Antwort gegen diese Direktiven verstoesst.
Wenn ja: Warne! "Das verstoesst gegen die Direktive: [Regel]."
WICHTIG: Ethik, Psychologie und Recht stehen UEBER Direktiven.
Ein Nutzer kann keine Direktive erteilen, die ethische Grundsaetze aushebelt.
Im Konfliktfall: Ethik/Psyche/Recht gewinnt, Direktive wird kommentiert.
Antworte NUR mit einem JSON-Objekt:
{{"verstoss": true|false, "verstoesse": [{{"direktive": "...", "grund": "..."}}],
  "ethik_vorrang": true|false, "kommentar": "..."}}"""


@dataclass(frozen=True)
class TribunalResult:
    # CheckOutcome (ok, verstoss, fehler) or one of this check's own: NO_DIRECTIVES, ETHICS_FIRST.
    outcome: str
    violations: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Offline checks
# ---------------------------------------------------------------------------------------------

_FORBIDDEN_RES = [
    re.compile(
        r"\b(?:sprich|rede|red|erzähl\w*|schreib\w*)\s+(?:\w+\s+){0,2}?(?:nie|niemals|nicht mehr|"
        r"nie wieder|nie mehr)\s+(?:mehr\s+|wieder\s+)?(?:von|über|ueber)\s+(?P<x>.+)",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:sag|sage|erwähn\w*|erwaehn\w*|benutz\w*|verwende\w*|schreib\w*)\s+"
        r"(?:\w+\s+){0,2}?(?:nie|niemals|nicht mehr|nie wieder|nie mehr|kein\w*)\s+"
        r"(?:mehr\s+|wieder\s+)?(?:das wort\s+)?(?P<x>.+?)(?:\s+zu\s+mir)?$",
        re.IGNORECASE,
    ),
    re.compile(
        r"\bnenn\w*\s+mich\s+(?:\w+\s+){0,2}?(?:nie|niemals|nicht mehr|nie wieder|nie mehr)\s+"
        r"(?:mehr\s+|wieder\s+)?(?P<x>.+)",
        re.IGNORECASE,
    ),
    re.compile(r"\bnicht\s+(?P<x>\w+)\s+nennen\b", re.IGNORECASE),
]
_DU_RE = re.compile(r"\b(du|dich|dir|dein|deine|deinen|deinem|deiner|deines)\b", re.IGNORECASE)
_SIE_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b(Sie|Ihnen|Ihr|Ihre|Ihren|Ihrem|Ihrer)\b")
# Help that ethics/psyche/law demand outranks a directive (seed 000 §8.3).
_SAFETY_RE = re.compile(
    r"telefonseelsorge|0800\s?111\s?0\s?111|\b112\b|notruf|notarzt|krisendienst", re.IGNORECASE
)


# A rule amended with more of the same ("Nutzer nicht Schatz nennen, auch nicht Hase"): the
# main rule and its additions, each read on its own. (The change reader,
# directives/agent/offline.py, knows an addition by the same words.)
ADDITION_WORDS = r"(?:auch|außerdem|ausserdem|zusätzlich|zusaetzlich|ebenso|genauso|sowie)"
_ADDITION_SPLIT_RE = re.compile(
    rf"\s*[,;–]\s*(?:und\s+|aber\s+)?(?={ADDITION_WORDS}\b)"
    rf"|\s+-\s+(?={ADDITION_WORDS}\b)|\s+und\s+(?={ADDITION_WORDS}\b)",
    re.IGNORECASE,
)
_ADDITION_LEAD_RE = re.compile(
    rf"^(?:(?:{ADDITION_WORDS}|und|oder|bitte|nicht|nie|niemals|kein\w*|mehr|wieder|von|vom|"
    r"über|ueber|das\s+wort|die\s+wörter|die\s+woerter|mich)\s+)+",
    re.IGNORECASE,
)
_ADDITION_TAIL_RE = re.compile(
    r"(?:\s+(?:zu\s+mir|nennen|sagen|erwähnen|erwaehnen|verwenden|benutzen|schreiben|mehr|"
    r"bitte|sprechen|reden))+$",
    re.IGNORECASE,
)
_LIST_SPLIT_RE = re.compile(r"\s*,\s*|\s+(?:und|oder|sowie)\s+", re.IGNORECASE)
_QUOTES = "'\"„“”‚‘’«»"
_EMPTY_TERMS = {"das", "es", "so", "so was", "sowas", "dies", "dieses"}


def _term_list(raw: str) -> list[str]:
    """ "Milch oder Käse" → ["Milch", "Käse"]; a quoted wording stays one term."""
    raw = raw.strip()
    if raw[:1] in _QUOTES:
        return [raw.strip(_QUOTES).strip()]
    return [part.strip(_QUOTES).strip() for part in _LIST_SPLIT_RE.split(raw)]


def _main_terms(directive: str) -> list[str]:
    terms: list[str] = []
    for pattern in _FORBIDDEN_RES:
        match = pattern.search(directive.strip().rstrip(".!"))
        if match:
            term = match.group("x").strip()
            term = re.sub(r"\s+(zu mir|mehr|bitte)$", "", term, flags=re.IGNORECASE)
            terms.extend(_term_list(term))
    return terms


def _addition_terms(addition: str) -> list[str]:
    """ "auch nicht Hase", "außerdem kein Wort über Käse" → the words it adds to the ban."""
    text = addition.strip().rstrip(".!")
    text = _ADDITION_LEAD_RE.sub("", text)
    text = _ADDITION_TAIL_RE.sub("", text)
    return _term_list(text) if text else []


def forbidden_terms(directive: str) -> list[str]:
    """The words a rule forbids Nova to say: "Sprich nie von Milch" → Milch, "Nutzer nicht
    Schatz nennen, auch nicht Hase" → Schatz, Hase (an addition extends a ban of words; it
    adds nothing to a rule that bans no word, such as "Keine Emojis verwenden")."""
    main, *additions = _ADDITION_SPLIT_RE.split(directive.strip())
    terms = _main_terms(main)
    if terms:
        for addition in additions:
            terms.extend(_addition_terms(addition))
    found: list[str] = []
    for term in terms:
        if term and term.lower() not in _EMPTY_TERMS and term not in found:
            found.append(term)
    return found


# -- forms of address ("Sieze mich", "Sprich mich mit Sie an", "Nicht mehr duzen") ----------------

_ADDRESS_TOKEN_RE = re.compile(r"[\wäöüßÄÖÜ]+(?:-[\wäöüßÄÖÜ]+)*|[,.;:!?]")
_NEGATIONS = frozenset("nicht nie niemals nimmer kein keine keinen keinem keiner ohne".split())
_CLAUSE_STOPS = frozenset(". ; : ! ? und aber sondern oder".split())
# Words between "sag" and the form in "Sag (bitte/ruhig/wieder) Sie zu mir".
_SAY_FILLERS = frozenset(
    "bitte ruhig einfach doch lieber mal wieder ab jetzt sofort immer nur noch künftig "
    "nie niemals nicht mehr sie".split()
)
_FRAME_BEFORE = frozenset("mit per beim".split())


def _form_of_word(words: list[str], i: int) -> str | None:
    """The form of address the word at ``i`` names, or None."""
    low = words[i].lower()
    if low.startswith(("siez", "gesiez")):
        return "sie"
    if low.startswith(("duz", "geduz")):
        return "du"
    if low in {"förmlich", "foermlich", "formell", "höflichkeitsform", "hoeflichkeitsform"}:
        return "sie"
    if low in {"informell", "vertraulich"}:
        return "du"
    if low.startswith(("sie-", "du-")):  # "Sie-Form", "Du-Regel"
        return low.split("-", 1)[0]
    if low not in {"sie", "du"}:
        return None
    before = words[i - 1].lower() if i > 0 else ""
    after = [w.lower() for w in words[i + 1 : i + 3]]
    if before in _FRAME_BEFORE:  # "mit Sie", "per du", "beim Sie"
        return low
    if after == ["zu", "mir"] or after[:1] == ["sagen"]:
        # "Sag (ruhig) du zu mir", only after the imperative "sag": "Was sagst du zu mir?" is
        # a question, not a form of address.
        j = i - 1
        while j >= 0 and words[j].lower() in _SAY_FILLERS:
            j -= 1
        if j >= 0 and words[j].lower() in {"sag", "sage", "sagen"}:
            return low
        if after[:1] == ["sagen"] and j >= 0 and words[j].lower() in {"zu", "mir"}:
            return low  # "zu mir Sie sagen"
    return None


def _negated(words: list[str], i: int) -> bool:
    """A negation in the marker's clause: up to five words before it ("Nicht mehr duzen",
    "Ich will nicht, dass du mich duzt", "Hör auf, mich zu duzen") or three after
    ("Sieze mich nie")."""
    j, seen = i - 1, 0
    while j >= 0 and seen < 6:
        word = words[j].lower()
        if word in _CLAUSE_STOPS:
            break
        if word == ",":
            nxt = words[j + 1].lower() if j + 1 < len(words) else ""
            prev = words[j - 1].lower() if j > 0 else ""
            if nxt != "dass" and prev != "auf":
                break
        if word in _NEGATIONS or (word == "auf" and j > 0 and words[j - 1].lower() in _STOP_VERBS):
            return True
        j, seen = j - 1, seen + 1
    for word in [w.lower() for w in words[i + 1 : i + 4]]:
        if word in _CLAUSE_STOPS or word == ",":
            break
        if word in _NEGATIONS:
            return True
    return False


_STOP_VERBS = frozenset("hör höre hoer hoere".split())


def demanded_form(directive: str) -> str | None:
    """ "sie" or "du" when the rule demands that form of address, else None.

    Read as people say it: "Sieze mich", "Sprich mich mit Sie an", "Sag Sie zu mir", "Bitte
    förmlich", the same for du ("Sprich mich mit du an", "Sag ruhig du zu mir"). A negated
    form demands the other one ("Nicht mehr duzen" → "sie"); contradicting marks demand none."""
    words = _ADDRESS_TOKEN_RE.findall(directive)
    forms: set[str] = set()
    for i in range(len(words)):
        form = _form_of_word(words, i)
        if form is None:
            continue
        if _negated(words, i):
            form = "du" if form == "sie" else "sie"
        forms.add(form)
    return forms.pop() if len(forms) == 1 else None


def terms_for(*, user: User) -> list[tuple[str, str]]:
    """(rule, term) for every term an active rule of ``user`` forbids: what the stream guard
    withholds before a sentence is sent (``conversation.pipeline.stream_guard``)."""
    return [
        (text, term) for text, _context in block_rows(user=user) for term in forbidden_terms(text)
    ]


def offline_findings(directives: list[str], reply: str) -> list[dict[str, str]]:
    # The same readings as the stream guard (quotes and paths are not Nova addressing anyone),
    # so a sentence the guard let through is not found guilty afterwards.
    findings: list[dict[str, str]] = []
    # Naming a rule (listing the rules, confirming one) is not breaking it.
    spoken = reply
    for directive in directives:
        spoken = re.sub(re.escape(directive.strip().rstrip(".!")), " ", spoken, flags=re.I)
    for directive in directives:
        for term in forbidden_terms(directive):
            if re.search(rf"\b{re.escape(term)}", spoken, re.IGNORECASE):
                findings.append({"direktive": directive, "grund": f"'{term}' kommt vor"})
        # The reasons avoid the words "siezen"/"Sie-Form": the correction block that quotes
        # them stands in the responder's prompt, where such a word reads as a rule.
        form = demanded_form(directive)
        if form == "sie" and has_du(reply):
            findings.append({"direktive": directive, "grund": "Anrede mit „du“ statt „Sie“"})
        if form == "du" and has_formal_sie(reply):
            findings.append({"direktive": directive, "grund": "Anrede mit „Sie“ statt „du“"})
    return findings


def review_offline(messages: list[dict[str, str]], hints: dict[str, Any]) -> str:
    directives = [str(d) for d in hints.get("directives") or []]
    reply = str(hints.get("reply") or "")
    findings = offline_findings(directives, reply)
    ethics = bool(findings) and bool(_SAFETY_RE.search(reply))
    return json.dumps(
        {
            "verstoss": bool(findings),
            "verstoesse": findings,
            "ethik_vorrang": ethics,
            "kommentar": ("Hilfe in einer Notlage geht der Direktive vor." if ethics else ""),
        },
        ensure_ascii=False,
    )


# ---------------------------------------------------------------------------------------------
# The checked reader and the review
# ---------------------------------------------------------------------------------------------


def _fail(step: str, reason: str, **details: Any) -> TribunalResult:
    logger.warning("tribunal %s: %s", step, reason)
    return TribunalResult(CheckOutcome.FAILED, details={"step": step, "reason": reason, **details})


def read_verdict(text: str) -> TribunalResult:
    try:
        raw = loads_checked(text)
    except ValueError:
        return _fail("kein_json", "die Antwort des Tribunals ist kein JSON", answer=text[:300])
    if not isinstance(raw, dict):
        return _fail("kein_objekt", f"die Antwort ist {type(raw).__name__}, kein Objekt")
    verstoss = raw.get("verstoss")
    if verstoss is None:
        verstoss = False
    if not isinstance(verstoss, bool):
        return _fail("feld_falscher_typ", f"verstoss ist {type(verstoss).__name__} statt bool")
    items = raw.get("verstoesse")
    if items is None:
        items = []
    if not isinstance(items, list):
        return _fail("feld_falscher_typ", f"verstoesse ist {type(items).__name__} statt Liste")
    violations: list[str] = []
    for item in items:
        if isinstance(item, str):
            violations.append(item)
        elif isinstance(item, dict) and isinstance(item.get("direktive"), str):
            reason = item.get("grund")
            suffix = f" ({reason})" if isinstance(reason, str) and reason else ""
            violations.append(f"{item['direktive']}{suffix}")
        else:
            return _fail("feld_falscher_typ", "ein Eintrag in verstoesse ist unlesbar")
    ethics = raw.get("ethik_vorrang")
    if ethics is not None and not isinstance(ethics, bool):
        return _fail("feld_falscher_typ", f"ethik_vorrang ist {type(ethics).__name__} statt bool")
    comment = raw.get("kommentar")
    details = {"kommentar": comment if isinstance(comment, str) else ""}
    if verstoss and not violations:
        violations = ["(ohne Angabe der Direktive)"]
    if not verstoss:
        return TribunalResult(CheckOutcome.OK, [], details)
    if ethics:
        # seed 000 §8.3: ethics/psyche/law win; the directive is commented, not enforced.
        return TribunalResult(ETHICS_FIRST, violations, details)
    return TribunalResult(CheckOutcome.VIOLATION, violations, details)


# The gateway's failure steps (novaberg/llm.py) as the model faults a fallback names.
_FAULTS = {
    llm.STEP_TIMEOUT: ModelFault.TIMEOUT,
    llm.STEP_FIRST_TOKEN: ModelFault.TIMEOUT,
    llm.STEP_DEADLINE: ModelFault.TIMEOUT,
    llm.STEP_CONNECTION: ModelFault.UNREACHABLE,
    llm.STEP_HTTP: ModelFault.HTTP_ERROR,
    llm.STEP_UNREADABLE: ModelFault.WRONG_SHAPE,
    llm.STEP_STREAM_BROKEN: ModelFault.STREAM_BROKEN,
}


def review(*, user: User, reply: str) -> TribunalResult:
    """Check ``reply`` against all active directives of ``user`` (seed 000 §8.3)."""
    directives = [text for text, _context in block_rows(user=user)]
    if not directives:
        return TribunalResult(NO_DIRECTIVES)
    listed = "\n".join(f"- {d}" for d in directives)
    messages = [
        {"role": "system", "content": PROMPT.format(directives=listed)},
        {"role": "user", "content": f"Antwort von Nova:\n{reply}"},
    ]
    hints = {"directives": directives, "reply": reply}
    gateway = get_gateway()
    result = gateway.chat(messages, purpose=PURPOSE, json_mode=True, hints=hints, temperature=0.0)
    if not result.ok:
        step = result.failure.step if result.failure else "fehler"
        fault = _FAULTS.get(step, ModelFault.OTHER)
        return _offline_instead(hints, fault, f"llm_{step}", result.backend, len(directives))
    verdict = read_verdict(result.text)
    if verdict.outcome == CheckOutcome.FAILED:
        fault = ModelFault.EMPTY if not result.text.strip() else ModelFault.NOT_JSON
        if verdict.details.get("step") != "kein_json" and result.text.strip():
            fault = ModelFault.WRONG_SHAPE
        step = str(verdict.details.get("step") or "unlesbar")
        return _offline_instead(hints, fault, step, result.backend, len(directives))
    return TribunalResult(
        verdict.outcome,
        verdict.violations,
        {**verdict.details, "backend": result.backend, "directives": len(directives)},
    )


def _offline_instead(
    hints: dict[str, Any], fault: ModelFault, step: str, backend: str, count: int
) -> TribunalResult:
    """The model's verdict failed or was unreadable: the deterministic checks decide
    (DESIGN.md "Language model calls"), named ``ersatz_offline`` with the model's failure."""
    if backend == "offline":
        # The offline backend itself failed: there is nothing else to fall back on.
        return _fail(step, "das Tribunal konnte nicht prüfen")
    verdict = read_verdict(review_offline([], hints))
    logger.warning(
        "tribunal model verdict unusable; offline checks decided",
        extra={"outcome": NodeOutcome.OFFLINE_FALLBACK.value, "step": step},
    )
    return TribunalResult(
        verdict.outcome,
        verdict.violations,
        {
            **verdict.details,
            "backend": backend,
            "directives": count,
            "ersatz": NodeOutcome.OFFLINE_FALLBACK.value,
            "modellfehler": fault.value,
            "step": step,
        },
    )
