"""Request fields that take only the JSON type the OpenAPI schema names.

DRF's own fields coerce: ``0`` is read as ``false``, ``12`` as the text ``"12"``, ``"5"`` as the
number 5. The schema says ``boolean``, ``string``, ``integer``, so a script reading it must
be able to rely on a wrong type being refused (400), not read as something else
(tests/test_api_contract.py, Schemathesis' negative cases).
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """Text only: a number, boolean, list or object is refused."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """``true`` or ``false`` only, as JSON booleans."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer only: no text, no fraction, no boolean."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return int(super().to_internal_value(data))
