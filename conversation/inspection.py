"""The turn inspector in words a person reads: German names for the nodes and their outcomes
(the technical name stays beside them), the named fallbacks ("Ersatz: Offline-Modus — …"), and
the reply checks as table rows. Pure functions over the logged rows; the view renders them."""

from __future__ import annotations

from typing import Any

from conversation.pipeline import fallback
from conversation.vocabulary import STATUS_LABELS, NodeOutcome, Status

NODE_LABELS: dict[str, str] = {
    "pending": "Offene Rückfrage",
    "router": "Weiche",
    "agent": "Auftrag",
    "enricher": "Suche (Gedächtnis, Wissen, Aufzeichnungen)",
    "reducer": "Dubletten",
    "gespraechsvektor": "Gesprächsvektor",
    "composer": "Verfasser (Inhalt)",
    "responder": "Antwort (Novas Stimme)",
    "tribunal": "Prüfung der Antwort",
    "gedaechtnis": "Gedächtnis",
    "erinnerung": "Erinnerung an die offene Frage",
    "abbruch": "Abbruch",
    "reaper": "Aufräumer (liegengebliebener Turn)",
}

OUTCOME_LABELS: dict[str, str] = {
    NodeOutcome.SKIPPED_QUESTION: "übersprungen (Rückfrage)",
    NodeOutcome.SKIPPED_FAILED: "übersprungen (Fehler zuvor)",
    NodeOutcome.FAILED: "Fehler",
    NodeOutcome.NO_RESULT: "ohne Ergebnis",
    NodeOutcome.OFFLINE_FALLBACK: "Ersatz: Offline-Modus",
    "gespraech": "Gespräch",
    "directives": "an die Regeln",
    "files": "an die Ordner",
    "wissen": "an das Wissen",
    "dateien_lesen": "aus den Dateien lesen",
    "antwort_auf_rueckfrage": "Antwort auf die Rückfrage",
    "keine_offene_frage": "keine offene Frage",
    "abgelehnt_neuer_auftrag": "abgelehnt, neuer Auftrag",
    "andere_nachricht": "andere Nachricht",
    "kein_agent": "kein Auftrag",
    "uebersprungen_aufgabe": "übersprungen (Auftrag)",
    "dedupliziert": "Dubletten entfernt",
    "keine_dubletten": "keine Dubletten",
    "bestimmt": "bestimmt",
    "verfasst": "verfasst",
    "schweigen": "Schweigen",
    "gestreamt": "gesendet",
    "rueckfrage_wortgleich": "Rückfrage wortgleich gesendet",
    "leere_antwort": "leere Antwort",
    "zitat_ohne_beleg": "Fundstelle ohne Beleg",
    "herkunft_verloren": "Herkunft verloren",
    "gespeichert": "gespeichert",
    "unterbrochen": "unterbrochen",
    "nichts_gespeichert": "nichts gespeichert",
    "nicht_gespeichert_fehler": "nicht gespeichert (Fehler)",
    "aufgabe_nicht_gespeichert": "nicht gespeichert (Auftrag)",
    "kein_vektor": "kein Suchvektor",
    "erinnert": "erinnert",
    "ok": "in Ordnung",
    "verstoss": "Verstoß",
    "keine_direktiven": "keine Regeln aktiv",
    "ethik_vorrang": "Ethik geht vor",
    "eingegriffen": "eingegriffen",
    **{status.value: label for status, label in STATUS_LABELS.items()},
}

CHECK_LABELS: dict[str, str] = {
    "direktiven": "Regeln eingehalten",
    "directives": "Regeln eingehalten",
    "waechter": "Satzprüfung vor dem Senden",
    "zitate": "Fundstellen belegt",
    "herkunft": "Herkunft genannt",
    "abweichung": "Abweichung Inhalt → Antwort",
}

DEVIATION_EXPLAINED = (
    "Die Abweichung ist der Anteil der Inhaltswörter der Antwort, die im Inhalt des Verfassers "
    "nicht vorkommen: 0 heißt, die Antwort sagt nur, was der Verfasser entschieden hat; 1 heißt, "
    "jedes Wort ist neu."
)

_BAD_MARKS = ("fehler", "llm_", "ohne_beleg", "verstoss", "verloren")


def outcome_label(outcome: str) -> str:
    """German words for an outcome; the technical name where none is known (``llm_…`` steps
    say which failure in their name)."""
    if outcome in OUTCOME_LABELS:
        return OUTCOME_LABELS[outcome]
    if outcome.startswith("llm_"):
        return f"Sprachmodell: {outcome.removeprefix('llm_').replace('_', ' ')}"
    return outcome.replace("_", " ")


def fallback_text(details: dict[str, Any]) -> str:
    """ "Ersatz: Offline-Modus — Modell antwortete nicht lesbar" for a node that fell back."""
    if not isinstance(details, dict) or not details.get(fallback.FALLBACK_KEY):
        return ""
    reason = fallback.label(str(details.get(fallback.FAULT_KEY) or ""))
    return f"Ersatz: Offline-Modus — {reason}"


def node_rows(bars: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The waterfall's bars with their German names, outcome words and named fallback."""
    rows = []
    for bar in bars:
        outcome = str(bar.get("outcome") or "")
        node = str(bar.get("node") or "")
        details = bar.get("details") or {}
        note = fallback_text(details)
        rows.append(
            {
                **bar,
                "node_label": NODE_LABELS.get(node, node),
                # A fallback's own line says it in full; the outcome word would repeat it.
                "outcome_label": ""
                if note and outcome == NodeOutcome.OFFLINE_FALLBACK
                else outcome_label(outcome),
                "fallback": note,
                "bad": any(mark in outcome for mark in _BAD_MARKS),
            }
        )
    return rows


def _verdict(outcome: str) -> str:
    return outcome_label(outcome) if outcome else "—"


def check_rows(checks: dict[str, Any]) -> list[dict[str, str]]:
    """The turn's reply checks as rows: what was checked, the verdict, what it found."""
    rows: list[dict[str, str]] = []
    for name, value in (checks or {}).items():
        if not isinstance(value, dict):
            continue
        label = CHECK_LABELS.get(name, name)
        if name == "zitate":
            missing = [str(c) for c in value.get("ohne_beleg") or []]
            verdict = "zitat_ohne_beleg" if missing else "ok"
            found = (
                "ohne Beleg: " + ", ".join(missing)
                if missing
                else f"{value.get('genannt', 0)} genannt, alle belegt"
            )
        elif name == "abweichung":
            verdict = "ueber_schwelle" if value.get("ueber_schwelle") else "ok"
            found = f"{value.get('wert', '—')} (Schwelle {value.get('schwelle', '—')})"
            words = [str(w) for w in value.get("neue_woerter") or []]
            if words:
                found += "; neu: " + ", ".join(words[:12])
            rows.append(
                {
                    "name": name,
                    "label": label,
                    "verdict": "über der Schwelle" if verdict != "ok" else "in Ordnung",
                    "technical": verdict,
                    "found": found,
                    "bad": "1" if verdict != "ok" else "",
                }
            )
            continue
        elif name == "waechter":
            changed = len(value.get("umgeschrieben") or [])
            withheld = len(value.get("zurueckgehalten") or [])
            verdict = "eingegriffen" if changed or withheld else "ok"
            found = f"{changed} Satz/Sätze umgeschrieben, {withheld} zurückgehalten"
        elif name == "herkunft":
            verdict = str(value.get("outcome") or "")
            lost = [
                *(value.get("ohne_herkunft") or []),
                *(value.get("ich_weiss") or []),
                *(value.get("ohne_quelle") or []),
            ]
            found = (
                f"{len(lost)} Aussage(n) ohne Herkunft"
                if lost
                else f"{value.get('aussagen_aus_aufzeichnungen', 0)} Aussage(n) aus Aufzeichnungen"
            )
        else:
            verdict = str(value.get("outcome") or "")
            violations = [str(v) for v in value.get("violations") or []]
            details = value.get("details") or {}
            note = fallback_text(details) if isinstance(details, dict) else ""
            found = "; ".join(violations) or note or ("—" if verdict else "")
            if note and violations:
                found += f" ({note})"
        rows.append(
            {
                "name": name,
                "label": label,
                "verdict": _verdict(verdict),
                "technical": verdict,
                "found": found,
                "bad": "1" if any(mark in verdict for mark in _BAD_MARKS) else "",
            }
        )
    return rows


def status_label(status: str) -> str:
    try:
        return STATUS_LABELS[Status(status)]
    except ValueError:
        return status
