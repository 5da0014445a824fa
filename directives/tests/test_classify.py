"""Checked readers of the classifier (seed 000 §4.3, §4.4) and the offline classifier."""

from __future__ import annotations

import json
from typing import Any

import pytest

from directives.agent.classify import ReadError, parse_answer
from directives.agent.offline import classify_offline

ORDINALS = {1: 501, 2: 502, 3: 777}


@pytest.mark.parametrize(
    ("raw", "target_id"),
    [
        pytest.param({"target_id": 2}, 502, id="int"),
        pytest.param({"target_id": "2"}, 502, id="string"),
        pytest.param({"target_id": "[3]"}, 777, id="list-spelling"),
        pytest.param({"target_id": " [1] "}, 501, id="whitespace"),
        pytest.param({"target_id": None}, None, id="null"),
        pytest.param({}, None, id="missing"),
    ],
)
def test_target_id_is_an_ordinal_mapped_back_on_the_server(
    raw: dict[str, Any], target_id: int | None
) -> None:
    answer = parse_answer(json.dumps({"action": "delete", **raw}), ORDINALS)
    assert answer.target_id == target_id
    assert answer.target_unknown is False


def test_an_ordinal_that_was_not_shown_is_unknown_not_a_real_id() -> None:
    answer = parse_answer('{"action": "delete", "target_id": 501}', ORDINALS)
    assert answer.target_id is None
    assert answer.target_unknown is True


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(0, id="zero"),
        pytest.param(-3, id="negative"),
        pytest.param(2.5, id="float"),
        pytest.param(True, id="bool"),
        pytest.param("zwei", id="word"),
        pytest.param("ID None", id="id-none"),
        pytest.param([2], id="list"),
        pytest.param({"id": 2}, id="object"),
    ],
)
def test_an_unreadable_target_id_is_loud(value: Any) -> None:
    with pytest.raises(ReadError) as caught:
        parse_answer(json.dumps({"action": "delete", "target_id": value}), ORDINALS)
    assert caught.value.step == "kennung_unlesbar"


@pytest.mark.parametrize("field", ["anweisung", "kontext", "suche", "grund"])
@pytest.mark.parametrize(
    "value", [7, 1.5, True, ["x"], {"x": 1}], ids=["int", "float", "bool", "list", "object"]
)
def test_a_text_field_of_the_wrong_type_names_the_field(field: str, value: Any) -> None:
    with pytest.raises(ReadError) as caught:
        parse_answer(json.dumps({"action": "create", field: value}), ORDINALS)
    assert caught.value.step == "feld_falscher_typ"
    assert caught.value.reason.startswith(f"{field} ist ")


@pytest.mark.parametrize("field", ["anweisung", "kontext", "suche"])
def test_null_is_read_like_a_missing_key(field: str) -> None:
    with_null = parse_answer(json.dumps({"action": "create", field: None}), ORDINALS)
    missing = parse_answer(json.dumps({"action": "create"}), ORDINALS)
    assert with_null == missing


@pytest.mark.parametrize(
    ("text", "step"),
    [
        pytest.param("[]", "kein_objekt", id="list"),
        pytest.param('"create"', "kein_objekt", id="string"),
        pytest.param("null", "kein_objekt", id="null"),
        pytest.param("42", "kein_objekt", id="number"),
        pytest.param("Gerne!", "kein_json", id="prose"),
        pytest.param('{"action": "cre', "kein_json", id="truncated"),
        pytest.param('{"action": "read_all"}', "aktion_unbekannt", id="unknown-action"),
        pytest.param('{"action": 3}', "feld_falscher_typ", id="int-action"),
        pytest.param("{}", "aktion_fehlt", id="no-action"),
    ],
)
def test_answers_without_a_readable_object_are_named(text: str, step: str) -> None:
    with pytest.raises(ReadError) as caught:
        parse_answer(text, ORDINALS)
    assert caught.value.step == step


def test_a_fenced_json_answer_is_read() -> None:
    answer = parse_answer('```json\n{"action": "READ"}\n```', ORDINALS)
    assert answer.action == "read"


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("Sprich nie von Milch!", "create"),
        ("Welche Regeln hast du?", "read"),
        ("Vergiss die Siez-Regel", "delete"),
        ("Du darfst wieder über Milch reden", "delete"),
        ("Stelle sie wieder her", "reactivate"),
        ("Mach die letzte Änderung rückgängig", "undo"),
        ("Ändere die Regel 'Chef' in 'Boss'", "update"),
        ("Du bist immer so lieb", "rejected"),
    ],
)
def test_offline_classifier_reads_german_patterns(text: str, action: str) -> None:
    answer = json.loads(classify_offline([], {"text": text, "history": []}))
    assert answer["action"] == action
    parse_answer(json.dumps(answer), {})  # the offline answer passes the same checked reader


def test_offline_classifier_distils_the_rule() -> None:
    answer = json.loads(classify_offline([], {"text": "Nova, sprich nie von Milch!"}))
    assert answer["anweisung"] == "Sprich nie von Milch"
    assert answer["kontext"] is None
