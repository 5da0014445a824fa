"""What every API answer can be, stated in the OpenAPI schema (drf-spectacular post-processing).

The views declare their own answers; this hook adds the ones the stack gives to every view of
a kind, so the schema is the whole truth (Schemathesis checks it, tests/test_api_contract.py):

- 401 and 403 for every operation that needs a logged-in person (DRF's authentication and
  permission checks answer before the view runs);
- 404 for every operation with a path parameter (a missing row, another person's row, and a
  path the URL patterns do not match all answer 404);
- 400 and 415 for every operation with a request body (a body that is no JSON, nested too
  deep, or of another media type), 400 for every operation with query parameters.

Text fields of a request say what DRF really takes (``AutoSchema``): no NUL where DRF refuses
it, and at least one non-space character where DRF trims and refuses the empty rest.

Every 4xx answer has one of three bodies, and the schema says so for all of them: a named
failure ``{status, step, reason}`` (``novaberg.api_errors``), DRF's and Django's
``{detail}`` (with ``step`` where a view names it), or a field's errors ``{field: [text]}``.
"""

from __future__ import annotations

from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular.drainage import has_override
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework import serializers

APPLICATION_ERROR = "ApplicationError"
DETAIL_ERROR = "DetailError"
FIELD_ERRORS = "FieldErrors"
ERROR_ANSWER = "ErrorAnswer"

ERROR_COMPONENTS: dict[str, dict[str, Any]] = {
    APPLICATION_ERROR: {
        "type": "object",
        "description": "A named failure (novaberg.api_errors): the step and a German sentence.",
        "properties": {
            "status": {"type": "string", "enum": ["fehler", "abgelehnt"]},
            "step": {"type": "string"},
            "reason": {"type": "string"},
        },
        "required": ["status", "step", "reason"],
    },
    DETAIL_ERROR: {
        "type": "object",
        "description": "DRF's and Django's own refusals (not logged in, not found, not JSON, "
        "another media type), German; some views name the step too.",
        "properties": {"detail": {"type": "string"}, "step": {"type": "string"}},
        "required": ["detail"],
    },
    FIELD_ERRORS: {
        "type": "object",
        "description": "A request body that does not fit its serializer: per field, the "
        "German sentences saying why (a nested field: its errors by key or position).",
        "minProperties": 1,
        "additionalProperties": {
            "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "object"}]
        },
    },
    ERROR_ANSWER: {
        "description": "Every 4xx answer of this API has one of these bodies.",
        "anyOf": [
            {"$ref": f"#/components/schemas/{APPLICATION_ERROR}"},
            {"$ref": f"#/components/schemas/{DETAIL_ERROR}"},
            {"$ref": f"#/components/schemas/{FIELD_ERRORS}"},
        ],
    },
}

DEFAULT_DESCRIPTIONS = {
    "400": "The request does not fit this operation (body, query or a rule of the app).",
    "401": "Not logged in: no valid token or session.",
    "403": "Not allowed: CSRF missing for a session, or a rule of access.",
    "404": "Missing, another person's, or a path this API does not have.",
    "415": "The body is not application/json.",
}

METHODS = ("get", "post", "put", "patch", "delete")


def _error_response(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {
            "application/json": {"schema": {"$ref": f"#/components/schemas/{ERROR_ANSWER}"}}
        },
    }


def _needs_login(operation: dict[str, Any]) -> bool:
    # drf-spectacular lists {} among the requirements of an operation anyone may call.
    security = operation.get("security") or []
    return bool(security) and {} not in security


def _default_codes(operation: dict[str, Any], path_item: dict[str, Any]) -> list[str]:
    parameters = [*path_item.get("parameters", []), *operation.get("parameters", [])]
    codes: list[str] = []
    if _needs_login(operation):
        codes += ["401", "403"]
    if any(p.get("in") == "path" for p in parameters):
        codes.append("404")
    if "requestBody" in operation:
        codes += ["400", "415"]
    elif any(p.get("in") == "query" for p in parameters):
        codes.append("400")
    return codes


def _resolve(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = schemas.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema


def _has_required(body: dict[str, Any], schemas: dict[str, Any]) -> bool:
    """Whether every alternative of the JSON body names a required field."""
    media = (body.get("content") or {}).get("application/json") or {}
    schema = _resolve(media.get("schema") or {}, schemas)
    alternatives = schema.get("oneOf") or schema.get("anyOf") or [schema]
    return all(bool(_resolve(part, schemas).get("required")) for part in alternatives)


def document_error_answers(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOKS entry: see the module docstring."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(ERROR_COMPONENTS)
    for path_item in result.get("paths", {}).values():
        for method in METHODS:
            operation = path_item.get(method)
            if operation is None:
                continue
            body = operation.get("requestBody")
            if body is not None and _has_required(body, schemas):
                # A body with required fields must be sent (DRF reads a missing one as {}).
                body["required"] = True
            responses = operation.setdefault("responses", {})
            for code in _default_codes(operation, path_item):
                responses.setdefault(code, {"description": DEFAULT_DESCRIPTIONS[code]})
            for code, response in responses.items():
                if str(code).startswith("4"):
                    description = response.get("description") or DEFAULT_DESCRIPTIONS.get(
                        str(code), ""
                    )
                    responses[code] = _error_response(description)
    return result


BLANK = {"type": "string", "maxLength": 0}
# What DRF's CharField takes, as JSON Schema patterns (Python's and ECMA's regex agree on them).
NO_NUL = "^[^\\u0000]*$"
HAS_TEXT = "\\S"
HAS_TEXT_NO_NUL = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"


def char_field_pattern(field: serializers.CharField) -> str | None:
    """The pattern a request value of ``field`` must match to be taken: DRF refuses NUL
    (``ProhibitNullCharactersValidator``) and, when it trims and blank is not allowed, text
    of spaces only."""
    nul_free = any(isinstance(v, ProhibitNullCharactersValidator) for v in field.validators)
    needs_text = not field.allow_blank and field.trim_whitespace
    if nul_free and needs_text:
        return HAS_TEXT_NO_NUL
    if nul_free:
        return NO_NUL
    return HAS_TEXT if needs_text else None


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's schema, with request text fields constrained as DRF reads them."""

    _direction: str | None = None

    def _map_basic_serializer(self, serializer: Any, direction: str) -> dict[str, Any]:
        # drf-spectacular does not hand the direction on to _insert_field_validators.
        outer, self._direction = self._direction, direction
        try:
            schema: dict[str, Any] = super()._map_basic_serializer(serializer, direction)
        finally:
            self._direction = outer
        return schema

    def _insert_field_validators(self, field: Any, schema: dict[str, Any]) -> None:
        super()._insert_field_validators(field, schema)
        alternatives = schema.get("oneOf")
        if has_override(field, "field") and alternatives and alternatives[-1] == BLANK:
            # A field whose schema is given explicitly (@extend_schema_field) says itself
            # whether "" is taken; the view refuses it before the serializer reads it.
            schema.update(schema.pop("oneOf")[0])
            return
        if (
            self._direction != "request"  # answers are not read by DRF's fields
            or not isinstance(field, serializers.CharField)
            or isinstance(field, serializers.RegexField)
            or field.read_only
            or has_override(field, "field")
        ):
            return
        pattern = char_field_pattern(field)
        if pattern is None:
            return
        # drf-spectacular states a blank-allowed string with constraints as oneOf [the string,
        # ""]; "" fits both once the pattern allows it, so the pair becomes anyOf.
        alternatives = schema.get("oneOf")
        target = alternatives[0] if alternatives else schema
        if target.get("type") != "string" or "pattern" in target:
            return
        target["pattern"] = pattern
        if alternatives:
            schema["anyOf"] = schema.pop("oneOf")
