"""Read-only REST for the file index: hybrid search and the line viewer.

GET /api/search/?q=…                         {results: [{path, lines, citation, channel,
                                               strength, archived}]}
GET /api/roots/{id}/file/?path=…&lines=a-b   {path, lines, text, cut, note}; text at most
                                               FILES_READ_MAX_CHARS; 404 outside the root or for
                                               another person's root (same answer as missing)
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversation.services import character_default
from files import reading
from files.retrieval import records_from_hits
from files.search import hybrid_search
from novaberg.api_errors import (
    ApplicationError,
    ConflictError,
    ErrorSerializer,
    ForbiddenError,
    NotFoundError,
)
from novaberg.auth import request_user

API_SEARCH_LIMIT = 10
# Steps of a read that mean "not there for this person": they answer 404 like a missing root
# (a folder or a link loop is no file to read, a name too long cannot exist, the lines asked
# for are not in the file).
NOT_FOUND_STEPS = frozenset(
    {
        "wurzel_unbekannt", "ausserhalb", "verborgen", "fort", "pfad_unlesbar", "keine_datei",
        "link_schleife", "name_zu_lang", "pfad_zu_lang", "keine_zeile", "zeilen_unlesbar",
        "kein_block",
    }
)  # fmt: skip
# Steps of the re-check of the root itself (DESIGN.md "Files": checked again at every read).
FENCE_STEPS = frozenset(
    {"pfad_geaendert", "ausserhalb_aussenrand", "kein_aussenrand", "wissenszone"}
)
# Digits per line number: a range of thousands of digits is bad input, not a number to parse.
LINE_DIGITS_MAX = 9


class SearchHitSerializer(serializers.Serializer):
    root_id = serializers.IntegerField()
    path = serializers.CharField()
    lines = serializers.CharField()
    citation = serializers.CharField()
    channel = serializers.CharField()
    strength = serializers.CharField()
    archived = serializers.BooleanField()


class SearchResultsSerializer(serializers.Serializer[dict[str, Any]]):
    results = SearchHitSerializer(many=True)


class FileLinesSerializer(serializers.Serializer[reading.ReadResult]):
    path = serializers.CharField()
    lines = serializers.SerializerMethodField()
    text = serializers.CharField()
    cut = serializers.BooleanField(
        help_text="the range was cut at the read limit (lines or FILES_READ_MAX_CHARS characters)"
    )
    note = serializers.CharField(
        source="message",
        help_text="German note for the person, e.g. „Gekürzt: …“ when cut in characters",
    )
    changed = serializers.BooleanField(help_text="the file changed since it was indexed")

    def get_lines(self, result: reading.ReadResult) -> str:
        return f"{result.line_start}-{result.line_end}"


class SearchApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "q",
                {
                    "type": "string",
                    "maxLength": settings.FILES_QUERY_MAX_CHARS,
                    "pattern": "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$",
                },
                required=True,
                description="the words to look for (not only spaces, no NUL)",
            )
        ],
        responses={200: SearchResultsSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        query = (request.query_params.get("q") or "").strip()
        if "\x00" in query:
            # PostgreSQL text cannot hold NUL; refuse it here instead of a 500 from the driver.
            raise ApplicationError(
                "Die Suche darf kein Nullzeichen (NUL) enthalten.", step="anfrage_unlesbar"
            )
        if not query:
            raise ApplicationError("Die Suche braucht einen Text (q).", step="leere_anfrage")
        if len(query) > settings.FILES_QUERY_MAX_CHARS:
            raise ApplicationError(
                f"Die Suche darf höchstens {settings.FILES_QUERY_MAX_CHARS} Zeichen lang sein.",
                step="anfrage_zu_lang",
            )
        from novaberg.embeddings import EmbeddingError, embed_one

        try:
            vector: list[float] | None = embed_one(query)
        except EmbeddingError:
            vector = None  # the lexical channel still answers
        user = request_user(request)
        character = character_default()
        outcome = hybrid_search(
            user=user,
            character=character,
            query_vector=vector,
            text=query,
            limit=API_SEARCH_LIMIT,
        )
        records = records_from_hits(
            user=user,
            character=character,
            hits=outcome.hits,
            query_vector=vector,
            stems=outcome.query_lexemes,
        )
        return Response(SearchResultsSerializer({"results": records}).data)


# The schema's pattern of ``lines``, and what the view reads: explicit classes, so that
# Python's and ECMA's regex (and the fuzzer's generator) agree on every character.
_SPACE = "[ \\t\\n\\r\\f\\v]*"
_NUMBER = f"([0-9]{{1,{LINE_DIGITS_MAX}}})"
LINES_PATTERN = f"^{_SPACE}{_NUMBER}{_SPACE}-{_SPACE}{_NUMBER}{_SPACE}$"
_LINES = re.compile(LINES_PATTERN)


class FileLinesApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("path", str, required=True),
            OpenApiParameter(
                "lines",
                str,
                required=False,
                pattern=LINES_PATTERN,
                description="a-b, 1-based, both included; a range the file does not have "
                "(b < a, a past the end) answers 404",
            ),
        ],
        responses={
            200: FileLinesSerializer,
            400: ErrorSerializer,
            403: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
        },
    )
    def get(self, request: Request, root_id: int) -> Response:
        path = request.query_params.get("path") or ""
        raw_lines = request.query_params.get("lines") or ""
        start, end = 1, None
        if raw_lines:
            match = _LINES.match(raw_lines)
            if match is None:
                raise ApplicationError(
                    "Zeilen bitte als a-b angeben, z. B. 3-12 "
                    f"(höchstens {LINE_DIGITS_MAX} Ziffern je Zahl).",
                    step="zeilen_unlesbar",
                )
            start, end = int(match.group(1)), int(match.group(2))
        result = reading.zeilen_lesen(
            user=request_user(request),
            character=character_default(),
            path=path,
            start=start,
            end=end,
            root_id=root_id,
        )
        if not result.ok:
            # Any other refusal is about a file that is there but cannot be given as text
            # now (too big, unreadable, binary, a damaged PDF): a state, not bad input (409).
            error: type[ApplicationError] = ConflictError
            if result.step in NOT_FOUND_STEPS:
                error = NotFoundError
            elif result.step in FENCE_STEPS:
                error = ForbiddenError
            raise error(result.message, step=result.step)
        return Response(FileLinesSerializer(result).data)
