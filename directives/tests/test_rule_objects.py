"""Rule objects and forms of address as people say them (issue 28): what a rule forbids, which
form of address it demands, which rule a description names, and what the offline classifier
reads from an order about a rule — without the router or the chat path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from directives import selectors, services
from directives.agent.offline import classify_offline
from directives.tribunal import demanded_form, forbidden_terms

SIE = [
    "Sprich mich ab jetzt mit Sie an",
    "Sag Sie zu mir",
    "Bitte förmlich",
    "Nicht mehr duzen",
    "Ich will nicht, dass du mich duzt",
    "Hör auf, mich zu duzen",
    "Sieze mich immer",
    "Den Nutzer immer siezen",
    "Sagen Sie bitte wieder Sie zu mir",
]
DU = [
    "Sprich mich mit du an",
    "Sag ruhig du zu mir",
    "nicht mehr siezen",
    "Bitte nicht so förmlich",
    "Sieze mich nie",
    "Den Nutzer duzen",
    "Wir sind per du",
]
NO_FORM = ["Sprich nie von Milch", "Was sagst du zu mir?", "Schreib förmliche Briefe", ""]


@pytest.mark.parametrize("rule", SIE)
def test_rules_demanding_sie(rule: str) -> None:
    assert demanded_form(rule) == "sie"


@pytest.mark.parametrize("rule", DU)
def test_rules_demanding_du(rule: str) -> None:
    assert demanded_form(rule) == "du"


@pytest.mark.parametrize("rule", NO_FORM)
def test_rules_demanding_no_form(rule: str) -> None:
    assert demanded_form(rule) is None


@pytest.mark.parametrize(
    ("rule", "terms"),
    [
        ("Nutzer nicht Schatz nennen, auch nicht Hase", ["Schatz", "Hase"]),
        ("Sag nie wieder Schatz zu mir, auch nicht Hase", ["Schatz", "Hase"]),
        ("Sprich nie von Milch, auch kein Hase", ["Milch", "Hase"]),
        ("Sprich nie von Milch oder Käse", ["Milch", "Käse"]),
        ("Sag nie das Wort Liebling und auch nicht Schatz", ["Liebling", "Schatz"]),
        ("Sag nie 'Guten Morgen, Schatz'", ["Guten Morgen, Schatz"]),
        # An addition to a rule that bans no word adds no word.
        ("Keine Emojis verwenden, auch keine Smileys", []),
    ],
)
def test_forbidden_terms_include_what_an_amendment_adds(rule: str, terms: list[str]) -> None:
    assert forbidden_terms(rule) == terms


@pytest.mark.parametrize(
    ("description", "form"),
    [
        ("Sie", "sie"),
        ("Siez-Regel", "sie"),
        ("die Regel mit Sie", "sie"),
        ("förmlich", "sie"),
        ("du", "du"),
        ("Duz-Regel", "du"),
        ("Anrede", "anrede"),
        ("Kumpel", None),
        ("Die Kumpel-Regel brauchst du nicht mehr.", None),
    ],
)
def test_address_objects_in_descriptions(description: str, form: str | None) -> None:
    assert selectors.address_object(description) == form


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("Lösch alle meine Regeln", []),
        ("Aktivier die gelöschte Regel wieder", []),
        ("die Emoji-Regel", ["emoji"]),
        ("die Regel über Anglizismen", ["anglizism"]),
    ],
)
def test_search_terms_leave_out_words_that_manage_rules(text: str, terms: list[str]) -> None:
    assert selectors.search_terms(text) == terms


@pytest.mark.django_db
@pytest.mark.parametrize("description", ["Sie", "siezen", "Siez-Regel", "förmlich", "Anrede"])
def test_the_rule_with_sie_is_found_however_it_is_worded(user: Any, description: str) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch")
    row = services.directive_create(user=user, text="Sag Sie zu mir").directive
    assert row is not None
    found = selectors.directive_search(user=user, description=description, active=True)
    assert [r.pk for r in found] == [row.pk]


# -- the offline classifier, called directly ----------------------------------------------------

ROWS = [
    {"n": 1, "text": "Keine Emojis verwenden", "active": True},
    {"n": 2, "text": "Den Nutzer immer siezen", "active": True},
    {"n": 3, "text": "Nutzer nicht Schatz nennen", "active": True},
    {"n": 4, "text": "Verzichte auf Anglizismen", "active": True},
    {"n": 5, "text": "Nenn mich nie Kumpel", "active": True},
    {"n": 6, "text": "Sprich nie von Milch", "active": False},
]


def _classify(text: str, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    hints = {"text": text, "history": [], "directives": ROWS if rows is None else rows}
    answer = json.loads(classify_offline([], hints))
    assert isinstance(answer, dict)
    return answer


@pytest.mark.parametrize(
    ("text", "target", "rule"),
    [
        (
            "Ändere die Emoji-Regel so, dass auch keine Smileys erlaubt sind.",
            1,
            "Keine Emojis verwenden, auch keine Smileys",
        ),
        ("Mach aus der Siez-Regel eine Duz-Regel.", 2, "Den Nutzer duzen"),
        ("Ändern Sie die Siez-Regel in eine Du-Regel", 2, "Den Nutzer duzen"),
        (
            "Ändere die Regel mit Schatz: auch nicht Hase",
            3,
            "Nutzer nicht Schatz nennen, auch nicht Hase",
        ),
        (
            "Korrigiere die Regel über Anglizismen: auch keine Fachbegriffe.",
            4,
            "Verzichte auf Anglizismen, auch keine Fachbegriffe",
        ),
        (
            "Erweitere die Kumpel-Regel: auch nicht Alter",
            5,
            "Nenn mich nie Kumpel, auch nicht Alter",
        ),
        (
            "Pass die Regel zu Emojis an: auch keine Sticker",
            1,
            "Keine Emojis verwenden, auch keine Sticker",
        ),
    ],
)
def test_offline_changes_name_the_rule_and_the_new_text(text: str, target: int, rule: str) -> None:
    answer = _classify(text)
    assert (answer["action"], answer["target_id"], answer["anweisung"]) == ("update", target, rule)


@pytest.mark.parametrize(
    ("text", "action", "suche"),
    [
        ("Die Kumpel-Regel brauchst du nicht mehr.", "delete", "Kumpel"),
        ("Die Emoji-Regel können Sie streichen.", "delete", "Emoji"),
        ("Lösch die Regel mit Sie.", "delete", "siezen"),
        ("Entferne die Du-Regel", "delete", "duzen"),
        ("Lösch alle meine Regeln.", "delete", "alle Regeln"),
        ("Die Emoji-Regel soll wieder gelten.", "reactivate", "Emoji"),
        ("Bring die Regel mit den Emojis zurück.", "reactivate", "Emojis"),
        ("Holen Sie die Milch-Regel zurück", "reactivate", "Milch"),
    ],
)
def test_offline_deletes_and_reactivations_name_the_rule(
    text: str, action: str, suche: str
) -> None:
    answer = _classify(text)
    assert (answer["action"], answer.get("suche")) == (action, suche)


def test_offline_the_deleted_rule_is_the_one_inactive_row() -> None:
    answer = _classify("Aktivier die gelöschte Regel wieder.")
    assert (answer["action"], answer["target_id"]) == ("reactivate", 6)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("Sprich mich ab jetzt mit Sie an", "Den Nutzer immer siezen"),
        ("Sag Sie zu mir", "Den Nutzer immer siezen"),
        ("Bitte förmlich", "Den Nutzer immer siezen"),
        ("Nicht mehr duzen", "Den Nutzer immer siezen"),
        ("Sprich mich mit du an", "Den Nutzer duzen"),
        ("Sag ruhig du zu mir", "Den Nutzer duzen"),
        ("nicht mehr siezen", "Den Nutzer duzen"),
    ],
)
def test_offline_forms_of_address_become_rules_that_are_enforced(text: str, rule: str) -> None:
    answer = _classify(text, rows=[])
    assert (answer["action"], answer["anweisung"]) == ("create", rule)
    assert demanded_form(answer["anweisung"]) == ("sie" if "siezen" in rule else "du")


def test_offline_a_new_form_of_address_replaces_the_other_one() -> None:
    answer = _classify("Sag ruhig du zu mir")
    assert (answer["action"], answer["target_id"], answer["anweisung"]) == (
        "update",
        2,
        "Den Nutzer duzen",
    )


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("Ab sofort bitte keine Fremdwörter mehr verwenden.", "Keine Fremdwörter mehr verwenden"),
        ("Von nun an kurze Antworten geben", "Kurze Antworten geben"),
        ("Bitte, ab jetzt nur noch kurze Sätze", "Nur noch kurze Sätze"),
    ],
)
def test_offline_rules_never_keep_a_lead(text: str, rule: str) -> None:
    assert _classify(text, rows=[])["anweisung"] == rule
