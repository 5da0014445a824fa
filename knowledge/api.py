"""REST endpoints of the knowledge library (DESIGN.md "Interfaces"). Thin: parse, authorise by
the requesting person, call one selector or service, serialise. Another person's object
answers 404, like a missing one."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from knowledge import library, marks, selectors
from knowledge.models import KnowledgeEdit, KnowledgeEntry
from knowledge.tools import datei_lesen, knowledge_edit_undo
from novaberg import fields as strict
from novaberg.api_errors import ConflictError
from novaberg.auth import request_user


class SourceSerializer(serializers.Serializer):
    path = serializers.CharField()
    lines = serializers.CharField(allow_blank=True)
    hash = serializers.CharField(allow_blank=True)
    mark = serializers.CharField(
        allow_blank=True, help_text='"Quelle geändert seit dem Lernen" while the gap is open'
    )


class KnowledgeEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    path = serializers.CharField()
    topic = serializers.CharField(allow_blank=True)
    version = serializers.CharField(allow_blank=True)
    haeufigkeit = serializers.IntegerField()
    verstaerkt_am = serializers.DateTimeField(allow_null=True)
    sources = SourceSerializer(many=True)


class KnowledgeEntryDetailSerializer(KnowledgeEntrySerializer):
    typ = serializers.CharField()
    summary = serializers.CharField(allow_blank=True)
    keywords = serializers.ListField(child=serializers.CharField())
    effektives_gewicht = serializers.FloatField()
    quelle_geaendert = serializers.BooleanField()
    text = serializers.CharField(allow_null=True, allow_blank=True)
    text_step = serializers.CharField(allow_blank=True, help_text="why the text is missing")


class CauseSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=KnowledgeEdit.Cause.choices)
    memory_id = serializers.IntegerField(allow_null=True)
    turn_id = serializers.IntegerField(allow_null=True)
    undoes = serializers.IntegerField(allow_null=True)


class KnowledgeEditSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    path = serializers.CharField()
    mark = serializers.CharField(allow_blank=True, help_text='as it stands in the text: "[i1>]"')
    cause = CauseSerializer()
    outcome = serializers.ChoiceField(choices=KnowledgeEdit.Outcome.choices)
    created_at = serializers.DateTimeField()
    diff = serializers.CharField(allow_blank=True)


class UndoRequestSerializer(serializers.Serializer):
    confirm = strict.StrictBooleanField(required=False, default=False)


class UndoQuestionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    question = serializers.CharField()


class UndoDoneSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    path = serializers.CharField()
    version = serializers.CharField(allow_blank=True)
    undo_edit_id = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()


class RefusalSerializer(serializers.Serializer):
    status = serializers.CharField()
    step = serializers.CharField()
    reason = serializers.CharField()


def _sources(states: list[selectors.SourceState]) -> list[dict[str, str]]:
    return [{"path": s.path, "lines": s.lines, "hash": s.hash, "mark": s.label} for s in states]


def entry_json(entry: KnowledgeEntry, states: list[selectors.SourceState]) -> dict[str, Any]:
    """``states``: the entry's sources compared with the index now (the re-opener)."""
    return {
        "id": entry.pk,
        "path": entry.path,
        "topic": entry.topic,
        "version": entry.version,
        "haeufigkeit": entry.haeufigkeit,
        "verstaerkt_am": entry.verstaerkt_am,
        "sources": _sources(states),
    }


def _mark_shown(edit: KnowledgeEdit) -> str:
    return marks.open_mark(int(edit.mark[1:])) if edit.mark[1:].isdigit() else ""


def edit_json(edit: KnowledgeEdit) -> dict[str, Any]:
    return {
        "id": edit.pk,
        "path": edit.path,
        "mark": _mark_shown(edit),
        "cause": {
            "kind": edit.cause,
            "memory_id": edit.memory_entry_id,
            "turn_id": edit.turn_id,
            "undoes": edit.undoes_id,
        },
        "outcome": edit.outcome,
        "created_at": edit.created_at,
        "diff": edit.diff,
    }


class KnowledgeListApi(APIView):
    @extend_schema(
        operation_id="knowledge_list", responses={200: KnowledgeEntrySerializer(many=True)}
    )
    def get(self, request: Request) -> Response:
        user = request_user(request)
        entries = list(selectors.entry_list(user=user))
        states = selectors.source_states(user=user, entries=entries)
        rows = [entry_json(e, states.get(e.pk, [])) for e in entries]
        return Response(KnowledgeEntrySerializer(rows, many=True).data)


class KnowledgeDetailApi(APIView):
    @extend_schema(
        operation_id="knowledge_detail",
        responses={200: KnowledgeEntryDetailSerializer, 404: RefusalSerializer},
    )
    def get(self, request: Request, entry_id: int) -> Response:
        entry = selectors.entry_get(user=request_user(request), entry_id=entry_id)
        if entry is None:
            raise Http404
        read = datei_lesen(user=request_user(request), character=entry.character, path=entry.path)
        user = request_user(request)
        states = selectors.source_states(user=user, entries=[entry]).get(entry.pk, [])
        data = {
            **entry_json(entry, states),
            "typ": entry.typ,
            "summary": entry.summary,
            "keywords": list(entry.keywords),
            "effektives_gewicht": round(library.entry_effective_weight(entry), 4),
            "quelle_geaendert": entry.quelle_geaendert or any(s.label for s in states),
            "text": read.text if read.ok else None,
            "text_step": "" if read.ok else str(read.step),
        }
        return Response(KnowledgeEntryDetailSerializer(data).data)


class KnowledgeEditListApi(APIView):
    @extend_schema(
        operation_id="knowledge_edits_list", responses={200: KnowledgeEditSerializer(many=True)}
    )
    def get(self, request: Request) -> Response:
        rows = [edit_json(e) for e in selectors.edit_list(user=request_user(request))]
        return Response(KnowledgeEditSerializer(rows, many=True).data)


class KnowledgeEditUndoApi(APIView):
    """Undo an edit: the body must carry ``{"confirm": true}`` (the API's explicit consent);
    without it the answer is the question, and nothing is written."""

    @extend_schema(
        operation_id="knowledge_edit_undo",
        request=UndoRequestSerializer,
        responses={
            200: PolymorphicProxySerializer(
                component_name="KnowledgeUndoAnswer",
                serializers=[UndoDoneSerializer, UndoQuestionSerializer],
                resource_type_field_name=None,
            ),
            404: RefusalSerializer,
            409: RefusalSerializer,
        },
    )
    def post(self, request: Request, edit_id: int) -> Response:
        edit = selectors.edit_get(user=request_user(request), edit_id=edit_id)
        if edit is None:
            raise Http404
        body = UndoRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if not body.validated_data["confirm"]:
            shown = _mark_shown(edit)
            what = f"die Einarbeitung {shown}" if shown else f"die Bearbeitung „{edit.tool}“"
            question = (
                f"Soll ich {what} in {edit.path} zurücknehmen? Dann steht dort wieder, was "
                "vorher dort stand."
            )
            return Response(
                UndoQuestionSerializer(
                    {"id": edit.pk, "status": "rueckfrage", "question": question}
                ).data
            )
        result = knowledge_edit_undo(user=request_user(request), edit_id=edit.pk)
        if not result.ok:
            raise ConflictError(result.message, step=str(result.step), status=str(result.status))
        return Response(
            UndoDoneSerializer(
                {
                    "id": edit.pk,
                    "status": "abgeschlossen",
                    "path": result.path,
                    "version": result.version,
                    "undo_edit_id": result.edit_id,
                    "message": result.message,
                }
            ).data
        )
