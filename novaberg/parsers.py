"""JSON from outside (API bodies, WebSocket frames) read with a depth limit and without lone
surrogates.

Python's ``json`` recurses once per nesting level: 3,000 brackets raise ``RecursionError``,
which no handler expected (a 500, a WebSocket closed with 1011), and a few hundred levels
that it still reads would recurse again in every serializer and renderer after it. The depth
is counted on the text first, without recursion, and a body deeper than ``MAX_DEPTH`` is
refused before ``json`` reads it.

``"\\ud800"`` is valid JSON but no character: a lone UTF-16 surrogate cannot be written to
PostgreSQL or encoded as UTF-8 into an answer, so every such value would fail somewhere later
(a 500 when an error message repeats it). It is refused where it enters.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Mapping
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils.json import strict_constant

# Deeper than any body or frame of this API needs (their deepest is 3); far below the
# interpreter's recursion limit, so nothing after the parser recurses near it either.
MAX_DEPTH = 64

TOO_DEEP = f"Der Inhalt ist zu tief verschachtelt (höchstens {MAX_DEPTH} Ebenen)."
LONE_SURROGATE = (
    "Der Inhalt enthält ein ungültiges Zeichen (ein einzelnes UTF-16-Ersatzzeichen wie \\ud800)."
)
NOT_JSON = "Der Inhalt der Anfrage ist kein gültiges JSON."

# A JSON string literal (escapes included), unrolled so that it never backtracks.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonRefused(ValueError):
    """The text is JSON this app does not take; ``step`` names why, ``message`` is German."""

    def __init__(self, message: str, *, step: str) -> None:
        super().__init__(message)
        self.message = message
        self.step = step


def nesting_depth_exceeds(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when arrays and objects in ``text`` nest deeper than ``limit``. Brackets inside
    string literals do not count; the text need not be valid JSON (json judges that later)."""
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth = max(0, depth - 1)
    return False


def has_lone_surrogate(value: Any) -> bool:
    """True when a string anywhere in the decoded value (object keys included) holds a
    surrogate code point. A pair such as ``"\\ud83d\\ude00"`` was decoded to one character
    already and does not count. Recursion is bounded by ``MAX_DEPTH``."""
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, Mapping):
        return any(has_lone_surrogate(k) or has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_lone_surrogate(item) for item in value)
    return False


def loads_checked(text: str) -> Any:
    """``json.loads`` for text from outside: raises ``JsonRefused`` (too deep, lone surrogate)
    or ``ValueError`` (not JSON, NaN/Infinity), never ``RecursionError``."""
    if nesting_depth_exceeds(text):
        raise JsonRefused(TOO_DEEP, step="zu_tief_verschachtelt")
    value = json.loads(text, parse_constant=strict_constant)
    if has_lone_surrogate(value):
        raise JsonRefused(LONE_SURROGATE, step="ungueltiges_zeichen")
    return value


class RefusedJsonError(ParseError):
    """A 400 whose German detail the exception handler keeps as it is."""


class CheckedJSONParser(JSONParser):
    """DRF's JSON parser with ``loads_checked``: a body nested deeper than ``MAX_DEPTH`` or
    holding a lone surrogate is refused with 400 and a German sentence."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            text = codecs.getreader(encoding)(stream).read()
            return loads_checked(text)
        except JsonRefused as exc:
            raise RefusedJsonError(exc.message, code=exc.step) from exc
        except ValueError as exc:  # UnicodeDecodeError included
            raise ParseError(f"JSON parse error - {exc}") from exc
