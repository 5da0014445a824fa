"""/api/schema/ is a contract scripts rely on: every operation's success answer is typed.

The schema is fetched through the real HTTP stack and walked: an operation whose 2xx answer has
no schema, or whose schema (followed through $ref, arrays and nested objects) is an ``object``
with no declared properties, fails the test — that is what a view answering a hand-built dict
documented as ``dict`` looks like."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

METHODS = ("get", "post", "put", "patch", "delete")


def resolve(schema: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = doc["components"]["schemas"][name]
    return schema


def untyped(schema: dict[str, Any] | None, doc: dict[str, Any], where: str) -> list[str]:
    """Places in ``schema`` that say nothing about their content."""
    if not schema:
        return [f"{where}: no schema"]
    schema = resolve(schema, doc)
    for combinator in ("allOf", "oneOf", "anyOf"):
        if combinator in schema:
            return [
                problem
                for i, part in enumerate(schema[combinator])
                for problem in untyped(part, doc, f"{where}.{combinator}[{i}]")
            ]
    kind = schema.get("type")
    if kind == "array":
        return untyped(schema.get("items"), doc, f"{where}[]")
    if kind == "object" or (kind is None and "properties" not in schema):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        if properties:
            return [
                problem
                for name, sub in properties.items()
                if resolve(sub, doc).get("type") in {"object", "array"}
                for problem in untyped(sub, doc, f"{where}.{name}")
            ]
        if isinstance(extra, dict) and extra:
            return []  # a map with typed values, e.g. {reason: n}
        if schema.get("description"):
            return []  # free-form JSON that says what it holds (pipeline details)
        return [f"{where}: untyped object"]
    return []


@pytest.fixture
def schema(api: APIClient) -> dict[str, Any]:
    answer = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert answer.status_code == 200
    doc: dict[str, Any] = answer.json()
    return doc


def test_every_success_answer_of_every_operation_is_typed(schema: dict[str, Any]) -> None:
    problems: list[str] = []
    operations = 0
    for path, item in schema["paths"].items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            operations += 1
            for code, response in operation["responses"].items():
                if not code.startswith("2") or code == "204":
                    continue
                content = response.get("content") or {}
                body = content.get("application/json") or next(iter(content.values()), None)
                where = f"{method.upper()} {path} {code}"
                problems.extend(untyped((body or {}).get("schema"), schema, where))
    assert operations >= 20
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("schema_part", "found"),
    [
        pytest.param({"type": "object"}, True, id="bare-object"),
        pytest.param(None, True, id="no-schema"),
        pytest.param({"type": "array", "items": {"type": "object"}}, True, id="array-of-dict"),
        pytest.param(
            {"type": "object", "properties": {"x": {"type": "object"}}}, True, id="nested-dict"
        ),
        pytest.param({"type": "object", "properties": {"x": {"type": "string"}}}, False, id="ok"),
        pytest.param(
            {"type": "object", "additionalProperties": {"type": "integer"}}, False, id="map"
        ),
    ],
)
def test_the_walk_finds_untyped_answers(schema_part: dict[str, Any] | None, found: bool) -> None:
    assert bool(untyped(schema_part, {"components": {"schemas": {}}}, "x")) is found


def test_error_answers_are_documented_where_a_service_refuses(schema: dict[str, Any]) -> None:
    release = schema["paths"]["/api/roots/"]["post"]["responses"]
    assert {"201", "400", "403"} <= set(release)
    answer = resolve(release["403"]["content"]["application/json"]["schema"], schema)
    # Every 4xx body is one of the API's error shapes (novaberg/openapi.py), the named
    # refusal among them.
    shapes = [resolve(part, schema) for part in answer["anyOf"]]
    error = next(s for s in shapes if set(s.get("properties", {})) == {"status", "step", "reason"})
    assert set(resolve(error["properties"]["status"], schema)["enum"]) == {"fehler", "abgelehnt"}
    directives = schema["paths"]["/api/directives/"]["get"]
    assert [p["name"] for p in directives["parameters"]] == ["active"]
    assert directives["parameters"][0]["schema"]["type"] == "boolean"
