"""REST endpoints of the directives (DESIGN.md "Interfaces"): only the person's own rows.

API writes need no chat confirmation, but they are bi-temporal, audited and verified like the
chat's (the same services). Another person's id answers 404, like a missing one.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from directives import selectors, services
from directives.models import Directive
from novaberg.api_errors import ApplicationError


class DirectiveSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    context = serializers.SerializerMethodField()
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    changed_at = serializers.DateTimeField(allow_null=True)
    replaces = serializers.IntegerField(source="replaces_id", allow_null=True)

    def get_context(self, row: Directive) -> str | None:
        return row.context or None


class StepSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    directive = serializers.IntegerField(source="directive_id", allow_null=True)
    request_id = serializers.CharField()
    step = serializers.CharField()
    action = serializers.CharField()
    source = serializers.CharField()
    outcome = serializers.CharField()
    previous = serializers.JSONField()
    details = serializers.JSONField()
    created_at = serializers.DateTimeField()


def _ok(outcome: services.WriteOutcome) -> Directive:
    if not outcome.ok or outcome.directive is None:
        raise ApplicationError(
            f"Das konnte ich nicht bestätigt speichern: {outcome.reason}",
            step=outcome.step,
            http_status=404 if outcome.step == "keine_zeile" else 400,
        )
    return outcome.directive


def _row_or_404(request: Request, directive_id: int) -> Directive:
    row = selectors.directive_get(user=request.user, directive_id=directive_id)
    if row is None:
        raise Http404
    return row


class DirectiveListApi(APIView):
    class DirectiveCreateSerializer(serializers.Serializer):
        text = serializers.CharField(max_length=services.MAX_TEXT_CHARS)
        context = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(
        parameters=[OpenApiParameter("active", bool, required=False)],
        responses={200: DirectiveSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        raw = request.query_params.get("active")
        active: bool | None = None
        if raw is not None:
            if raw.lower() not in ("true", "false", "1", "0"):
                raise ApplicationError("active muss true oder false sein.", step="filter_unlesbar")
            active = raw.lower() in ("true", "1")
        rows = selectors.directive_list(user=request.user, active=active)
        return Response(DirectiveSerializer(rows, many=True).data)

    @extend_schema(request=DirectiveCreateSerializer, responses={201: DirectiveSerializer})
    def post(self, request: Request) -> Response:
        data = self.DirectiveCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        row = _ok(
            services.directive_create(
                user=request.user,
                text=data.validated_data["text"],
                context=data.validated_data["context"],
                source="api",
            )
        )
        return Response(DirectiveSerializer(row).data, status=status.HTTP_201_CREATED)


class DirectiveDetailApi(APIView):
    class DirectivePatchSerializer(serializers.Serializer):
        text = serializers.CharField(required=False, max_length=services.MAX_TEXT_CHARS)
        context = serializers.CharField(required=False, allow_blank=True)
        active = serializers.BooleanField(required=False)

    @extend_schema(responses={200: DirectiveSerializer})
    def get(self, request: Request, directive_id: int) -> Response:
        return Response(DirectiveSerializer(_row_or_404(request, directive_id)).data)

    @extend_schema(request=DirectivePatchSerializer, responses={200: DirectiveSerializer})
    def patch(self, request: Request, directive_id: int) -> Response:
        row = _row_or_404(request, directive_id)
        data = self.DirectivePatchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        if not values:
            raise ApplicationError("Nichts zu ändern.", step="nichts_zu_tun")
        if "text" in values or "context" in values:
            if not row.active:
                raise ApplicationError(
                    "Eine inaktive Direktive kann nicht geändert werden; stell sie erst wieder "
                    "her.",
                    step="nicht_aktiv",
                )
            # Bi-temporal: the old row is deactivated, a new one answers (seed 000 §5.2).
            row = _ok(
                services.directive_update(
                    user=request.user,
                    directive_id=row.pk,
                    text=values.get("text", row.text),
                    context=values.get("context"),
                    source="api",
                )
            )
        if "active" in values and values["active"] != row.active:
            service = (
                services.directive_reactivate if values["active"] else services.directive_deactivate
            )
            row = _ok(service(user=request.user, directive_id=row.pk, source="api"))
        return Response(DirectiveSerializer(row).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, directive_id: int) -> Response:
        row = _row_or_404(request, directive_id)
        if row.active:
            _ok(services.directive_deactivate(user=request.user, directive_id=row.pk, source="api"))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DirectiveHistoryApi(APIView):
    @extend_schema(responses={200: None})
    def get(self, request: Request, directive_id: int) -> Response:
        chain = selectors.directive_chain(user=request.user, directive_id=directive_id)
        if chain is None:
            raise Http404
        steps = selectors.steps_for(user=request.user, directive_ids=[r.pk for r in chain])
        return Response(
            {
                "id": directive_id,
                "chain": DirectiveSerializer(chain, many=True).data,
                "steps": StepSerializer(steps, many=True).data,
            }
        )
