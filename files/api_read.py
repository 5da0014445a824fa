"""Read-only REST for the file index: hybrid search and the line viewer (issue 5).

GET /api/search/?q=…                         {results: [{path, lines, citation, channel,
                                               strength, archived}]}
GET /api/roots/{id}/file/?path=…&lines=a-b   {path, lines, text}; 404 outside the root or for
                                               another person's root (same answer as missing)
"""

from __future__ import annotations

import re

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from files import reading
from files.retrieval import records_from_hits
from files.search import hybrid_search
from novaberg.api_errors import ApplicationError

API_SEARCH_LIMIT = 10


def _character() -> object:
    from conversation.services import character_default

    return character_default()


SEARCH_RESULT = inline_serializer(
    "SearchResults",
    {
        "results": serializers.ListField(
            child=inline_serializer(
                "SearchHit",
                {
                    "path": serializers.CharField(),
                    "lines": serializers.CharField(),
                    "citation": serializers.CharField(),
                    "channel": serializers.CharField(),
                    "strength": serializers.CharField(),
                    "archived": serializers.BooleanField(),
                },
            )
        )
    },
)
FILE_LINES = inline_serializer(
    "FileLines",
    {
        "path": serializers.CharField(),
        "lines": serializers.CharField(),
        "text": serializers.CharField(),
    },
)


class SearchApi(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("q", str, required=True)], responses={200: SEARCH_RESULT}
    )
    def get(self, request: Request) -> Response:
        query = (request.query_params.get("q") or "").strip()
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
        character = _character()
        outcome = hybrid_search(
            user=request.user,
            character=character,
            query_vector=vector,
            text=query,
            limit=API_SEARCH_LIMIT,
        )
        records = records_from_hits(
            user=request.user,
            character=character,
            hits=outcome.hits,
            query_vector=vector,
            stems=outcome.query_lexemes,
        )
        results = [
            {
                "root_id": r["root_id"],
                "path": r["path"],
                "lines": r["lines"],
                "citation": r["citation"],
                "channel": r["channel"],
                "strength": r["strength"],
                "archived": r["archived"],
            }
            for r in records
        ]
        return Response({"results": results})


_LINES = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")


class FileLinesApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("path", str, required=True),
            OpenApiParameter("lines", str, required=False, description="a-b"),
        ],
        responses={200: FILE_LINES},
    )
    def get(self, request: Request, root_id: int) -> Response:
        path = request.query_params.get("path") or ""
        raw_lines = request.query_params.get("lines") or ""
        start, end = 1, None
        if raw_lines:
            match = _LINES.match(raw_lines)
            if match is None:
                raise ApplicationError(
                    "Zeilen bitte als a-b angeben, z. B. 3-12.", step="zeilen_unlesbar"
                )
            start, end = int(match.group(1)), int(match.group(2))
        result = reading.zeilen_lesen(
            user=request.user,
            character=_character(),
            path=path,
            start=start,
            end=end,
            root_id=root_id,
        )
        if not result.ok:
            not_found = result.step in {
                "wurzel_unbekannt",
                "ausserhalb",
                "verborgen",
                "fort",
                "pfad_unlesbar",
            }
            raise ApplicationError(
                result.message, step=result.step, http_status=404 if not_found else 400
            )
        return Response(
            {
                "path": result.path,
                "lines": f"{result.line_start}-{result.line_end}",
                "text": result.text,
                "cut": result.cut,
                "changed": result.changed,
            }
        )
