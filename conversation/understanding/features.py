"""What a message is made of, read with German morphology (``conversation.morphology``): the
features the intent classifier learns from.

Three kinds, all strings in one bag:

- **lemmas** (``l=verbieten``) and lemma pairs (``b=regel|zeigen``), so "verbiete", "verboten"
  and "Verbot" meet, and a typo's neighbours still count;
- **sentence form**, per clause: a verb at the head of a clause that is not a question (the
  imperative "Verzichte …", "Sprich mich … an", also where the tagger read the first word as a
  noun), a Sie-imperative ("Sprechen Sie …"), "du" beside a modal ("du sollst", "kannst du"),
  "dass du", a wish of the speaker ("ich will/möchte …"), the speaker as subject ("Ich war …"),
  negation and its kind, a time cue ("ab jetzt", "künftig", "nie wieder"), a question;
- **objects** the orders are about: a rule word (also inside a compound: "Emoji-Regel"), a file
  name with extension, a path, the person's folders, Nova's knowledge ("dein Wissen").

Nothing here decides; the classifier weighs (``conversation.understanding.model``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from conversation import morphology
from conversation.morphology import Word

# Words that may stand before the verb of an imperative clause ("Bitte nenn mich …",
# "Ab jetzt sprich …", "Nova, lass …").
LEAD_WORDS = frozenset(
    "bitte aber und also dann jetzt ab sofort morgen heute von nun an künftig kuenftig zukünftig "
    "zukuenftig in zukunft nova hey hallo ok okay ja nein nee doch übrigens uebrigens nochmal "
    "einmal mal ach so na gut außerdem ausserdem noch eins eine sache und zwar liebe lieber".split()
)
NOMINATIVE = frozenset("ich du er es wir ihr man".split())
# "Es wäre schön/besser, wenn du …": an evaluation that makes a "wenn du" clause a wish.
EVALUATIONS = frozenset("schön super toll besser nett lieb cool prima angenehm klasse".split())
# Verbs with which the speaker tells Nova what to do ("Ich verbiete dir, …", "Ich bitte dich …").
ASKING_VERBS = frozenset(
    "verbieten untersagen bitten erteilen auftragen befehlen anweisen auffordern ersuchen".split()
)
MODALS = frozenset("sollen dürfen müssen können mögen möchten werden wollen".split())
WISH_LEMMAS = frozenset(
    "wollen möchten mögen wünschen bitten lieber gern gerne wichtig bevorzugen erwarten".split()
)
NEGATIONS = frozenset("nicht nie niemals kein keine keinen keinem keiner keines nimmer".split())
TIME_CUES = (
    "ab jetzt",
    "ab sofort",
    "ab morgen",
    "ab heute",
    "von jetzt an",
    "von nun an",
    "in zukunft",
    "künftig",
    "zukünftig",
    "nie wieder",
    "nie mehr",
    "nicht mehr",
    "immer",
    "stets",
    "nie",
    "niemals",
    "nur noch",
    "ab nun",
    "fortan",
    "grundsätzlich",
)
RULE_STEMS = ("regel", "direktive", "anweisung", "verbot", "vorgabe", "abmachung")
FILE_STEMS = ("datei", "notiz", "unterlage", "dokument", "aufzeichnung", "abschnitt", "kapitel")
FOLDER_STEMS = ("ordner", "verzeichnis", "freigabe", "freigegeben", "freigeb")
KNOWLEDGE_STEMS = ("wissen", "gedächtnis", "gedaechtnis", "bibliothek", "gemerkt", "einpräg")
_FILE_RE = re.compile(r"^[\w\-]+\.(?:md|txt|pdf|docx?|csv|json|org|rtf|odt|html?|ya?ml)$", re.I)
_PATH_RE = re.compile(r"^~?/")
_CLAUSE_END = frozenset({".", "!", "?", ";", ":", ",", "–", "-", "—", "(", ")"})
_W_WORDS = frozenset(
    "was wie wo wann warum wieso weshalb welche welcher welches welchen wer".split()
)


# What the verbs of an order do, by lemma (a separable verb's particle joined: "nimm … raus" →
# "rausnehmen"). German lexical knowledge, not sentences: the classifier weighs the class.
VERB_CLASSES: dict[str, frozenset[str]] = {
    "aendern": frozenset(
        "ändern abändern umändern anpassen korrigieren erweitern ergänzen ersetzen abschwächen "
        "verschärfen umformulieren umschreiben präzisieren lockern tauschen austauschen "
        "umbenennen aktualisieren überarbeiten ausweiten ausdehnen einschränken".split()
    ),
    "loeschen": frozenset(
        "löschen streichen entfernen vergessen aufheben rausnehmen herausnehmen wegmachen "
        "rausschmeißen rauswerfen wegwerfen abschaffen kippen canceln deaktivieren abstellen "
        "ausschalten weglassen fallenlassen".split()
    ),
    "zurueckholen": frozenset(
        "reaktivieren wiederherstellen zurückholen zurückbringen wiederbeleben einschalten "
        "anschalten aktivieren zurücknehmen hervorholen".split()
    ),
    "zeigen": frozenset("zeigen auflisten aufzählen nennen vorlesen sagen verraten".split()),
    "freigeben": frozenset("freigeben teilen öffnen erlauben gewähren".split()),
    "lernen": frozenset("merken einprägen lernen aufnehmen speichern behalten".split()),
    "lesen": frozenset("lesen vorlesen durchsuchen suchen finden nachschauen nachsehen".split()),
}
# Verbs of what Nova does in a conversation: a rule about her is made of these ("Sieze mich",
# "Nenn mich Boss", "Antworte auf Deutsch"); "Pass auf dich auf" or "Träum was Schönes" wish.
SPEECH_VERBS = frozenset(
    "sagen sprechen reden nennen antworten beantworten schreiben erwähnen verwenden benutzen "
    "nutzen gebrauchen siezen duzen ansprechen anreden fragen erinnern formulieren erzählen "
    "begrüßen grüßen verabschieden zitieren wiederholen übersetzen erklären fluchen scherzen "
    "loben kommentieren kritisieren unterlassen vermeiden verzichten weglassen halten bleiben "
    "gendern nachfragen vorschlagen empfehlen ansprechen aufhören lassen schicken senden "
    "bringen machen geben zeigen auflisten korrigieren verbessern unterbrechen rufen "
    "buchstabieren betonen abkürzen ausschreiben angeben einbauen benennen anfangen beginnen "
    "enden beenden schließen verraten wünschen erlauben meiden sein".split()
)
# Verbs of HOW Nova speaks: a rule even without "immer"/"nie" ("Sieze mich", "Nenn mich Boss",
# "Antworte auf Deutsch", "Halte dich kurz"); "Erzähl mir etwas" asks for one thing.
MANNER_VERBS = frozenset(
    "siezen duzen nennen ansprechen anreden antworten sprechen reden formulieren vermeiden "
    "verzichten unterlassen weglassen halten bleiben gendern begrüßen verabschieden verwenden "
    "benutzen gebrauchen aufhören lassen".split()
)
# The form of address named without a verb ("Bitte förmlich", "per du", "in der Sie-Form").
ADDRESS_RE = re.compile(
    r" (förmlich|foermlich|formell|per sie|per du|sie-form|du-form|mit sie an|mit du an) "
)
_PARTICLES = frozenset(
    "raus heraus weg zurück wieder ein an aus auf ab um vor nach her hervor fallen".split()
)
# Words that say a rule has ended ("kann weg", "ist hinfällig") or is forbidden now.
ENDED_WORDS = frozenset("weg hinfällig obsolet erledigt überflüssig unnötig vorbei".split())
BANNED_WORDS = frozenset("verboten tabu untersagt unerwünscht".split())
BAN_HEADS = frozenset("kein keine keinen keinem keiner schluss genug weg".split())


# Sentence forms that aim an order at Nova (features of ``_clause_form`` and friends).
ORDER_FORMS = frozenset(
    {
        "form=imperativ",
        "form=sie_imperativ",
        "form=du_modal",
        "form=dass_du_wunsch",
        "form=bitte_modal",
        "form=verbloses_verbot",
        "form=infinitiv_auftrag",
        "form=ich_an_dich",
        "form=bitte_regel",
        "form=wenn_du_wunsch",
    }
)


def fold(text: str) -> str:
    """Lower case, umlauts kept, ae/oe/ue spellings folded to umlauts where a word has them."""
    low = unicodedata.normalize("NFC", text).lower()
    return low.replace("ß", "ss")


@dataclass
class Reading:
    """One message as the classifier sees it."""

    text: str
    words: list[Word]
    clauses: list[list[Word]] = field(default_factory=list)
    features: list[str] = field(default_factory=list)

    def has(self, name: str) -> bool:
        return name in self.features


def _clauses(words: list[Word]) -> tuple[list[list[Word]], list[bool]]:
    """The clauses of a message, and for each whether a sentence ends after it ('.', '!', '?',
    '…', or the message's end): reported speech ends with its sentence."""
    out: list[list[Word]] = []
    ends: list[bool] = []
    current: list[Word] = []
    for word in words:
        if word.text in _CLAUSE_END or word.tag.startswith("$"):
            if current:
                out.append(current)
                ends.append(word.text in {".", "!", "?", "…"})
            current = []
        elif word.tag in {"KOUS", "KON"} and current and word.low in {"dass", "aber", "und"}:
            # "dass", "aber", "und" open a new clause and stay in it (its verb is last).
            out.append(current)
            ends.append(False)
            current = [word]
        else:
            current.append(word)
    if current:
        out.append(current)
        ends.append(True)
    return out, ends


def _head(clause: list[Word]) -> tuple[int, Word | None]:
    """The first word after the lead words ("bitte", "ab jetzt", "Nova" …)."""
    for i, word in enumerate(clause):
        if word.low in LEAD_WORDS:
            continue
        return i, word
    return len(clause), None


# Tags of words that are never the verb of an imperative, even where a verb reading exists
# ("Meine" → meinen, "Die" …).
_FUNCTION_TAGS = frozenset(
    "ART PPOSAT PPER PDS PDAT PIS PIAT PRELS PRF KON KOUS KOKOM APPR APPRART PTKNEG PWS PWAV "
    "PWAT PTKANT CARD".split()
)
# Verbs of address the tagger's lexicon lacks ("sieze" reads as a name).
_ADDRESS_VERBS = {"siez": "siezen", "duz": "duzen", "ihrz": "ihrzen"}


@lru_cache(maxsize=4096)
def _verb_reading(word: Word) -> str:
    """The verb lemma of a clause-initial word, read out of context too: in context the tagger
    may read "Sprich" as an adverb or "Verzichte" as a noun; an unknown form is tried as an
    infinitive ("formatier" → formatieren). "" when the word is no verb."""
    if word.tag.startswith("V"):
        return word.lemma.lower()
    if word.tag in _FUNCTION_TAGS:
        return ""
    low = word.low
    for stem, verb in _ADDRESS_VERBS.items():
        if low.startswith(stem):
            return verb
    tagger = morphology.tagger()
    found = tagger.candidates(low)
    if not found or found[0][0] in _FUNCTION_TAGS:
        return ""
    best = found[0][1]
    if any(tag.startswith("VV") and p >= best - 4.0 for tag, p in found) and best > -25.0:
        lemma, tag = tagger.lemma(low)
        return lemma.lower() if tag.startswith("V") else low
    if best > -25.0 or len(low) < 5:
        return ""  # a word the tagger knows, and not as a verb ("immer", "sogar"), or "puh"
    for guess in (low + "en", low + "n") if not low.endswith("en") else ():
        tags = tagger.candidates(guess, cutoff=2)
        if tags and tags[0][0] == "VV(INF)":
            return guess
    return ""


_IMPERATIVE_AUX = frozenset("sei seid seien werde werdet hab habe habt".split())


@lru_cache(maxsize=4096)
def can_be_imperative(word: Word) -> bool:
    """Can this clause-initial form be an imperative? "wird", "gewinnt", "kann" cannot: the
    tagger knows them, and never as an imperative."""
    if "IMP" in word.tag or word.low in _IMPERATIVE_AUX:
        return True
    if word.tag.startswith(("VA", "VM")):
        return False
    found = morphology.tagger().candidates(word.low, cutoff=6)
    if not found or found[0][1] <= -25.0:
        return True  # a form the tagger does not know ("sieze", "formatier"): no objection
    if any("IMP" in tag for tag, _p in found):
        return True
    # "erwähne", "rede" are also first person; "wird", "gewinnt", "kommst", "gehen" are not
    # imperatives of anyone.
    return not word.low.endswith(("t", "st", "en"))


def _clause_form(clause: list[Word], question: bool) -> list[str]:
    found: list[str] = []
    i, head = _head(clause)
    if head is None:
        return found
    nxt = clause[i + 1] if i + 1 < len(clause) else None
    lows = [w.low for w in clause]
    if head.low in {"dass", "daß"}:
        if nxt is not None and nxt.low in {"du", "sie"}:
            found.append("form=dass_du")
        return found
    if verb_of_discourse(clause):
        found.append("form=floskel")
        return found
    if head.low == "lass" and nxt is not None and nxt.low in {"uns", "mich"}:
        found.append("form=vorschlag")  # "Lass uns das Thema wechseln"
        return found
    if head.tag.startswith("PW") or head.low in _W_WORDS:
        found.append("form=w_frage")
        return found
    if head.text == "Sie" and nxt is not None and nxt.lemma.lower() in MODALS and not question:
        found.append("form=du_modal")  # "Sie sollen mir niemals Aktien empfehlen"
        return found
    if head.low in {"wenn", "falls"} and nxt is not None and nxt.low in {"du", "sie"}:
        found.append("form=wenn_du")
        return found
    if head.low in NOMINATIVE or head.tag in {"PPER", "ART", "PDS", "PIS"}:
        if head.low in {"ich", "wir"}:
            verb = nxt.lemma.lower() if nxt is not None else ""
            if verb in WISH_LEMMAS:
                found.append("form=ich_wunsch")
            elif verb in ASKING_VERBS and {"dir", "dich"} & set(lows):
                found.append("form=ich_an_dich")  # "Ich verbiete dir, …"
            else:
                found.append("form=ich_subjekt")
        elif head.low == "du":
            if nxt is not None and nxt.lemma.lower() in MODALS:
                found.append("form=du_modal")
            else:
                found.append("form=du_subjekt")
        else:
            found.append("form=nominal")
        return found
    verb = _verb_reading(head)
    if verb:
        after = nxt.low if nxt is not None else ""
        if nxt is not None and nxt.text == "Sie" and not question:
            found.append("form=sie_imperativ")
        elif after in {"du", "sie", "ihr"} and (head.tag.startswith("VM") or verb in MODALS):
            found.append("form=bitte_modal" if question else "form=du_modal")
        elif after == "du" and not question:
            found.append("form=du_aussage")  # "Von jetzt an redest du nur noch Bairisch"
        elif after in {"ich", "wir"} and verb in ASKING_VERBS and {"dir", "dich"} & set(lows):
            found.append("form=ich_an_dich")  # "Hiermit verbiete ich dir …"
        elif after in NOMINATIVE or (after == "sie" and head.low.endswith("en")):
            # "Gehen sie …" is a (lower-cased) Sie-form; "Benutze sie" uses them: an object.
            found.append("form=v1_frage" if question else "form=v1_aussage")
        elif question:
            found.append("form=v1_frage")
        elif can_be_imperative(head):
            found.append("form=imperativ")
            found.append(f"imp={verb}")
        else:
            found.append("form=v1_aussage")  # "Ab jetzt wird alles besser"
    elif head.tag.startswith("ADJ") or head.tag.startswith("N"):
        found.append("form=nominal")
    if (
        not question
        and "du" in lows
        and any(w.lemma.lower() in MODALS and w.tag.startswith("VM") for w in clause)
    ):
        found.append("form=du_modal")
    return found


# Imperatives that steer the talk, not Nova: "stell dir vor", "sag mal", "hör mal", "schau mal".
_DISCOURSE_VERBS = frozenset("vorstellen glauben schauen gucken warten raten danken".split())
_DISCOURSE_SHORT = frozenset("sagen hören hoeren".split())


def verb_of_discourse(clause: list[Word]) -> bool:
    i, head = _head(clause)
    lemma = _verb_reading(head) if head is not None else ""
    if head is None or not lemma:
        return False
    rest = [w.low for w in clause[i + 1 :]]
    if lemma == "stellen" and rest and rest[-1] == "vor":
        return True
    if lemma in _DISCOURSE_VERBS and len(rest) <= 3:
        return True
    return lemma in _DISCOURSE_SHORT and len(rest) <= 2 and (not rest or rest[0] in {"mal", "zu"})


def _compound_parts(word: Word) -> list[str]:
    low = word.low
    parts = [p for p in re.split(r"[-–]", low) if p]
    return parts if len(parts) > 1 else []


def _verbs(words: list[Word]) -> list[str]:
    """Verb lemmas, separable particles joined to their verb ("nimm … raus" → rausnehmen)."""
    verbs: list[str] = []
    last: int | None = None
    for word in words:
        if word.tag.startswith("V") or (word.tag.startswith("N") and word is words[0]):
            lemma = _verb_reading(word) if word is words[0] else word.lemma.lower()
            if lemma:
                verbs.append(lemma)
                last = len(verbs) - 1
        elif word.tag == "PTKVZ" and last is not None and word.low in _PARTICLES:
            verbs[last] = word.low + verbs[last]
        elif word.tag.startswith("$."):
            last = None
    return verbs


# "Kein Problem", "keine Ahnung mehr", "keine Zeit": idioms about the speaker, not bans.
IDIOM_OBJECTS = frozenset(
    "ahnung zeit lust kraft kräfte geld nerven energie idee sorge sorgen angst problem ursache "
    "plan hoffnung chance wunder witz scherz ding thema frage".split()
)


def _verbless_ban(clause: list[Word]) -> bool:
    """ "Keine Gute-Nacht-Geschichten mehr", "Schluss mit Emojis": a ban without a verb."""
    i, head = _head(clause)
    if head is None or head.low not in BAN_HEADS and head.low != "nie":
        return False
    if any(w.tag == "PTKZU" for w in clause):
        return False  # "nie wieder bei Rot zu gehen": a complement, not a ban
    nouns = [w.low for w in clause[i + 1 :] if w.tag.startswith("N")]
    if nouns and nouns[0] in IDIOM_OBJECTS:
        return False
    return not any(w.tag.startswith("V") and "FIN" in w.tag for w in clause)


SAYING_VERBS = frozenset("sagen meinen predigen erklären schreiben rufen fordern lehren".split())


def _reports_speech(clause: list[Word], forms: list[str]) -> bool:
    """A clause in which someone (not Nova, not an order) says something: what follows it is
    what they said."""
    if any(f in ORDER_FORMS for f in forms):
        return False
    return any(w.tag.startswith("VV") and w.lemma.lower() in SAYING_VERBS for w in clause)


_INDEFINITE = frozenset("ein eine einen einem etwas was paar mal bisschen".split())


def _one_off(clause: list[Word]) -> bool:
    """ "Erzähl mir etwas über den Sommer", "Schreib mir ein Gedicht": one thing asked for."""
    lows = [w.low for w in clause]
    return bool({"mir", "uns"} & set(lows)) and bool(_INDEFINITE & set(lows[1:4]))


def _infinitive_order(clause: list[Word]) -> bool:
    """ "Ab sofort bitte auf Englisch antworten", "niemals über meinen Job sprechen": the clause
    ends in an infinitive, has no finite verb and no subject."""
    while len(clause) > 1 and clause[-1].low in LEAD_WORDS | {"ok", "okay", "gell", "danke"}:
        clause = clause[:-1]  # "nicht mehr über die Arbeit reden bitte"
    verbs = [w for w in clause if w.tag.startswith("V")]
    if not verbs or not verbs[-1].tag.endswith("(INF)") or verbs[-1] is not clause[-1]:
        return False
    if len(clause) > 1 and clause[-2].tag == "PTKZU":
        return False  # "…, nie wieder bei Rot zu gehen": the complement of another verb
    if any("FIN" in w.tag or "IMP" in w.tag for w in verbs):
        return False
    return not any(w.low in NOMINATIVE for w in clause)


def _past_narrative(clause: list[Word]) -> bool:
    """ "Meine Tochter hat die Regeln umgeschrieben": something that happened, told."""
    has_aux = any(w.tag.startswith("VA") and "FIN" in w.tag for w in clause)
    return has_aux and any(w.tag.endswith("(PP)") for w in clause)


def _impersonal_norm(clause: list[Word]) -> bool:
    """ "Hier wird nicht geflucht", "Mit mir wird nie über Geld geredet": a passive norm with a
    negation or a time cue, nobody named as its subject."""
    lows = [w.low for w in clause]
    if any(w in NOMINATIVE for w in lows):
        return False
    if any(w in BANNED_WORDS for w in lows) or ("kein" in lows and "thema" in lows):
        return True  # "Das Wort X ist ab jetzt tabu", "Handball ist kein Thema mehr"
    passive = any(w.lemma.lower() == "werden" and "FIN" in w.tag for w in clause) and any(
        w.tag.endswith("(PP)") for w in clause
    )
    return passive and any(w in NEGATIONS or w in {"immer", "stets", "nur"} for w in lows)


_ADDRESS_FORM_RE = re.compile(r"^(ge)?(siez|duz)(en|e|t|st|te|ten)?$")


def _address_verbs(words: list[Word]) -> list[Word]:
    """The tagger's lexicon lacks "siezen"/"duzen" (it reads "siezen" as a foreign word): their
    forms get a verb's tag and lemma, so "nicht mehr siezen" is the infinitive order it is."""
    out: list[Word] = []
    for word in words:
        match = _ADDRESS_FORM_RE.match(word.low)
        if match is None or word.tag.startswith("V"):
            out.append(word)
            continue
        lemma = "siezen" if match.group(2) == "siez" else "duzen"
        ending = match.group(3) or ""
        tag = (
            "VV(PP)"
            if match.group(1)
            else "VV(INF)"
            if ending == "en"
            else "VV(IMP)"
            if ending in {"", "e"}
            else "VV(FIN)"
        )
        out.append(Word(word.text, lemma, tag))
    return out


def read(text: str) -> Reading:
    words = _address_verbs(morphology.tag_text(text[:600]))
    reading = Reading(text=text, words=words)
    reading.clauses, ends = _clauses(words)
    low = " " + fold(" ".join(w.text for w in words)) + " "
    question = text.rstrip().endswith("?")
    bag: list[str] = []
    lemmas: list[str] = []
    for word in words:
        if word.tag.startswith("$"):
            continue
        lemma = fold(word.lemma)
        if _FILE_RE.match(word.text):
            bag.append("obj=dateiname")
            lemma = "<datei>"
        elif _PATH_RE.match(word.text):
            bag.append("obj=pfad")
            lemma = "<pfad>"
        elif word.text.isdigit():
            lemma = "<zahl>"
        lemmas.append(lemma)
        bag.append(f"l={lemma}")
        bag.append(f"t={word.tag}")
        for part in _compound_parts(word):
            bag.append(f"l={part}")
        for stem in RULE_STEMS:
            if stem in lemma:
                bag.append("obj=regel")
        for stem in FILE_STEMS:
            if stem in lemma:
                bag.append("obj=datei")
        for stem in FOLDER_STEMS:
            if stem in lemma:
                bag.append("obj=ordner")
        for stem in KNOWLEDGE_STEMS:
            if stem in lemma and not word.tag.startswith("V"):  # "Wusstest du …" is no library
                bag.append("obj=wissen")
        if word.low.startswith(("siez", "gesiez", "duz", "geduz")):
            bag.extend(["v=siezen" if "siez" in word.low else "v=duzen", "art_und_weise"])
        if word.low in NEGATIONS:
            bag.append("neg")
        if word.low in ENDED_WORDS:
            bag.append("vk=loeschen")
        if word.low in BANNED_WORDS:
            bag.append("verboten")
        if word.low in {"du", "dir", "dich", "dein", "deine", "deinen", "deinem", "deiner"}:
            bag.append("an_nova")
        if word.low in {"mich", "mir", "mein", "meine", "meinen", "meinem", "meiner"}:
            bag.append("an_mich")
        if word.text in {"Sie", "Ihnen", "Ihr", "Ihre", "Ihren", "Ihrem"} and word is not words[0]:
            bag.append("sie_anrede")
    for a, b in zip(lemmas, lemmas[1:], strict=False):
        bag.append(f"b={a}|{b}")
    if ADDRESS_RE.search(low):
        bag.extend(["anrede", "art_und_weise"])  # "Bitte förmlich", "per du", "mit Sie an"
    for cue in TIME_CUES:
        if f" {cue} " in low:
            bag.append(f"cue={cue.replace(' ', '_')}")
            bag.append("cue")
    if question:
        bag.append("frage")
    if "?" not in text and not any(ch in text for ch in ".!"):
        bag.append("ohne_zeichen")
    n_words = sum(1 for w in words if not w.tag.startswith("$"))
    bag.append(f"laenge={min(n_words // 4, 5)}")
    for verb in _verbs(words):
        bag.append(f"v={verb}")
        if verb in SPEECH_VERBS:
            bag.append("sprechakt")
        if verb in MANNER_VERBS:
            bag.append("art_und_weise")
        for name, members in VERB_CLASSES.items():
            if verb in members:
                bag.append(f"vk={name}")
    wished = False
    evaluated = False
    reported = False
    for n, (clause, sentence_ends) in enumerate(zip(reading.clauses, ends, strict=True)):
        forms = _clause_form(clause, question)
        if "form=dass_du" in forms and wished:
            forms.append("form=dass_du_wunsch")
        if "form=wenn_du" in forms and (wished or evaluated):
            forms.append("form=wenn_du_wunsch")  # "Ich fände es schön, wenn du …"
        wished = wished or any(w.lemma.lower() in WISH_LEMMAS for w in clause)
        evaluated = evaluated or any(w.lemma.lower() in EVALUATIONS for w in clause)
        if _verbless_ban(clause):
            forms.append("form=verbloses_verbot")
        if not question and _infinitive_order(clause):
            forms.append("form=infinitiv_auftrag")
        if not question and _impersonal_norm(clause):
            forms.append("form=norm")
        if _past_narrative(clause):
            forms.append("vergangenheit")
        if reported:
            # "Mein Opa hat immer gesagt: Vergiss nie …": an order someone else gave.
            forms = [f.replace("form=", "zitat=") for f in forms]
        elif _reports_speech(clause, forms):
            reported = True
        if sentence_ends:
            reported = False  # what someone said ends with its sentence
        bag.extend(forms)
        if n == 0:
            bag.extend(f"erst_{f}" for f in forms)
    finite = any("FIN" in w.tag or "IMP" in w.tag for w in words)
    if not question and not finite and "bitte" in low and "cue" in bag:
        bag.append("form=bitte_regel")  # "Bitte immer zuerst die Antwort. Ab jetzt."
    if any(_one_off(clause) for clause in reading.clauses):
        bag.append("einmalig")
    if any(f.startswith("zitat=") for f in bag):
        bag.append("zitat")
    if ORDER_FORMS & set(bag):
        bag.append("auftragsform")
    reading.features = bag
    return reading
