"""REST endpoints of the directives (DESIGN.md "Interfaces"): only the person's own rows.

API writes need no chat confirmation, but they are bi-temporal, audited and verified like the
chat's (the same services). Another person's id answers 404, like a missing one.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from directives import selectors, services
from directives.models import Directive
from novaberg.api_errors import (
    ApplicationError,
    ConflictError,
    ErrorSerializer,
    NotFoundError,
)
from novaberg.auth import request_user


class DirectiveSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    # The stubs type the attribute Field.context; DRF's metaclass makes this a declared field.
    context = serializers.SerializerMethodField()  # type: ignore[assignment]
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
    source = serializers.CharField()  # type: ignore[assignment]  # a field, not Field.source
    outcome = serializers.CharField()
    previous = serializers.JSONField()
    details = serializers.JSONField()
    created_at = serializers.DateTimeField()


class DirectiveHistorySerializer(serializers.Serializer[dict[str, Any]]):
    id = serializers.IntegerField()
    chain = DirectiveSerializer(many=True)
    steps = StepSerializer(many=True)


def _ok(outcome: services.WriteOutcome) -> Directive:
    if outcome.step == "schon_vorhanden":
        # An active rule of the person has the same text (checked under the person's lock).
        raise ConflictError(outcome.reason, step=outcome.step)
    if not outcome.ok or outcome.directive is None:
        error = NotFoundError if outcome.step == "keine_zeile" else ApplicationError
        raise error(
            f"Das konnte ich nicht bestätigt speichern: {outcome.reason}", step=outcome.step
        )
    return outcome.directive


def _row_or_404(request: Request, directive_id: int) -> Directive:
    row = selectors.directive_get(user=request_user(request), directive_id=directive_id)
    if row is None:
        raise Http404
    return row


class StrictBooleanField(serializers.BooleanField):
    """``true``/``false`` or ``1``/``0``, any case; every other word is an error."""

    TRUE_VALUES = {"true", "1"}
    FALSE_VALUES = {"false", "0"}
    NULL_VALUES: set[Any] = set()

    def to_internal_value(self, data: Any) -> bool:
        return super().to_internal_value(str(data).lower())


class DirectiveFilterSerializer(serializers.Serializer[dict[str, Any]]):
    """``?active=true|false``; absent: every row, active or not."""

    active = StrictBooleanField(required=False)


class DirectiveCreateSerializer(serializers.Serializer[dict[str, Any]]):
    text = serializers.CharField(max_length=services.MAX_TEXT_CHARS)
    context = serializers.CharField(  # type: ignore[assignment]  # a field, not Field.context
        required=False, allow_blank=True, default=""
    )


class DirectiveListApi(APIView):
    @extend_schema(
        parameters=[DirectiveFilterSerializer],
        responses={200: DirectiveSerializer(many=True), 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        # A plain dict: in a QueryDict an absent boolean would read as "false" (HTML forms).
        query = DirectiveFilterSerializer(data=request.query_params.dict())
        if not query.is_valid():
            raise ApplicationError("active muss true oder false sein.", step="filter_unlesbar")
        rows = selectors.directive_list(
            user=request_user(request), active=query.validated_data.get("active")
        )
        return Response(DirectiveSerializer(rows, many=True).data)

    @extend_schema(
        request=DirectiveCreateSerializer,
        responses={201: DirectiveSerializer, 400: ErrorSerializer, 409: ErrorSerializer},
        description="409: an active rule of the person has the same text; nothing is written.",
    )
    def post(self, request: Request) -> Response:
        data = DirectiveCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        row = _ok(
            services.directive_create(
                user=request_user(request),
                text=data.validated_data["text"],
                context=data.validated_data["context"],
                source="api",
            )
        )
        return Response(DirectiveSerializer(row).data, status=status.HTTP_201_CREATED)


class DirectivePatchSerializer(serializers.Serializer[dict[str, Any]]):
    text = serializers.CharField(required=False, max_length=services.MAX_TEXT_CHARS)
    context = serializers.CharField(  # type: ignore[assignment]  # a field, not Field.context
        required=False, allow_blank=True
    )
    active = serializers.BooleanField(required=False)


class DirectiveDetailApi(APIView):
    @extend_schema(responses={200: DirectiveSerializer})
    def get(self, request: Request, directive_id: int) -> Response:
        return Response(DirectiveSerializer(_row_or_404(request, directive_id)).data)

    @extend_schema(
        request=DirectivePatchSerializer,
        responses={
            200: DirectiveSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
        },
    )
    def patch(self, request: Request, directive_id: int) -> Response:
        user = request_user(request)
        row = _row_or_404(request, directive_id)
        data = DirectivePatchSerializer(data=request.data)
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
                    user=user,
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
            row = _ok(service(user=user, directive_id=row.pk, source="api"))
        return Response(DirectiveSerializer(row).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, directive_id: int) -> Response:
        row = _row_or_404(request, directive_id)
        if row.active:
            _ok(
                services.directive_deactivate(
                    user=request_user(request), directive_id=row.pk, source="api"
                )
            )
        return Response(status=status.HTTP_204_NO_CONTENT)


class DirectiveHistoryApi(APIView):
    @extend_schema(responses={200: DirectiveHistorySerializer})
    def get(self, request: Request, directive_id: int) -> Response:
        user = request_user(request)
        chain = selectors.directive_chain(user=user, directive_id=directive_id)
        if chain is None:
            raise Http404
        steps = selectors.steps_for(user=user, directive_ids=[r.pk for r in chain])
        history = {"id": directive_id, "chain": chain, "steps": steps}
        return Response(DirectiveHistorySerializer(history).data)
