"""REST endpoints of the directives (DESIGN.md "Interfaces"): only the person's own rows.

API writes need no chat confirmation, but they are bi-temporal, audited and verified like the
chat's (the same services). Another person's id answers 404, like a missing one.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversation import address
from conversation.agents import AgentResult
from conversation.vocabulary import Status
from directives import proposals, selectors, services
from directives.models import Directive
from novaberg import fields as strict
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
    text = strict.StrictCharField(max_length=services.MAX_TEXT_CHARS)
    context = strict.StrictCharField(  # type: ignore[assignment]  # a field, not Field.context
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
    text = strict.StrictCharField(required=False, max_length=services.MAX_TEXT_CHARS)
    context = strict.StrictCharField(  # type: ignore[assignment]  # a field, not Field.context
        required=False, allow_blank=True
    )
    active = strict.StrictBooleanField(required=False)


class DirectiveDetailApi(APIView):
    """One rule: read, change (``PATCH``), delete (``DELETE``). A rule is bi-temporal (seed
    000): DELETE deactivates it like ``PATCH {"active": false}``, and it stays readable here
    with its history."""

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
        description="A body without a known field changes nothing (200, the rule as it is); "
        "409: a new text for an inactive rule, or the same text as another active rule.",
    )
    def patch(self, request: Request, directive_id: int) -> Response:
        user = request_user(request)
        row = _row_or_404(request, directive_id)
        data = DirectivePatchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        if not values:
            # Nothing this endpoint knows was sent (unknown keys are ignored): nothing changes.
            return Response(DirectiveSerializer(row).data)
        if "text" in values or "context" in values:
            if not row.active:
                raise ConflictError(
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

    @extend_schema(
        responses={204: None, 404: ErrorSerializer},
        description="Deactivates the rule (README: the interface keeps DELETE). The row and its "
        "history stay readable with active: false; a second DELETE changes nothing.",
    )
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


# -- the rules page: changes through the chat's question and gate (directives/proposals.py) ---


class ProposalCreateSerializer(serializers.Serializer[dict[str, Any]]):
    action = serializers.ChoiceField(choices=list(proposals.ACTIONS))
    directive_id = strict.StrictIntegerField(required=False, allow_null=True, min_value=1)
    text = strict.StrictCharField(
        required=False, allow_blank=True, default="", max_length=services.MAX_TEXT_CHARS
    )
    context = strict.StrictCharField(  # type: ignore[assignment]  # a field, not Field.context
        required=False, allow_blank=True, default="", max_length=services.MAX_TEXT_CHARS
    )


# The order as the schema states it, one shape per action (what the gate needs to ask its
# question): create and update need a text with a character that is not a space, update,
# delete and reactivate a rule's id, undo nothing. ``ProposalCreateSerializer`` reads them all.
def _action_field(*actions: str) -> serializers.Field:
    @extend_schema_field({"type": "string", "enum": list(actions)})
    class ActionField(serializers.Field):
        pass

    return ActionField()


def _rule_id_field() -> serializers.IntegerField:
    return strict.StrictIntegerField(min_value=1, max_value=proposals.MAX_ROW_ID)


def _rule_text_field() -> serializers.CharField:
    return strict.StrictCharField(max_length=services.MAX_TEXT_CHARS)


def _context_field() -> serializers.CharField:
    return strict.StrictCharField(
        required=False, allow_blank=True, max_length=services.MAX_TEXT_CHARS
    )


class ProposalCreateOrderSerializer(serializers.Serializer[dict[str, Any]]):
    action = _action_field("create")
    text = _rule_text_field()
    context = _context_field()  # type: ignore[assignment]  # a field, not Field.context


class ProposalUpdateOrderSerializer(serializers.Serializer[dict[str, Any]]):
    action = _action_field("update")
    directive_id = _rule_id_field()
    text = _rule_text_field()
    context = _context_field()  # type: ignore[assignment]  # a field, not Field.context


class ProposalTargetOrderSerializer(serializers.Serializer[dict[str, Any]]):
    action = _action_field("delete", "reactivate")
    directive_id = _rule_id_field()


class ProposalUndoOrderSerializer(serializers.Serializer[dict[str, Any]]):
    action = _action_field("undo")


PROPOSAL_ORDER = PolymorphicProxySerializer(
    component_name="ProposalOrder",
    serializers=[
        ProposalCreateOrderSerializer,
        ProposalUpdateOrderSerializer,
        ProposalTargetOrderSerializer,
        ProposalUndoOrderSerializer,
    ],
    resource_type_field_name=None,
)


class ProposalAnswerSerializer(serializers.Serializer[dict[str, Any]]):
    confirm = strict.StrictBooleanField()


class ProposalSerializer(serializers.Serializer[AgentResult]):
    """What the gate answered: the open question word for word (``rueckfrage``), or a result."""

    status = serializers.CharField()
    step = serializers.CharField()
    text = serializers.CharField()
    question = serializers.CharField(allow_null=True)
    pending_id = serializers.SerializerMethodField()
    action = serializers.SerializerMethodField()
    directive_id = serializers.SerializerMethodField()

    def get_pending_id(self, result: AgentResult) -> int | None:
        value = result.data.get("pending_id")
        return int(value) if isinstance(value, int) else None

    def get_action(self, result: AgentResult) -> str | None:
        value = result.data.get("action")
        return str(value) if value else None

    def get_directive_id(self, result: AgentResult) -> int | None:
        value = result.data.get("directive_id")
        return int(value) if isinstance(value, int) else None


def _shown(request: Request, result: AgentResult) -> AgentResult:
    """Nova's own sentences in the person's form of address; the question stays word for word
    as it is stored (it is what her consent refers to)."""
    if result.status != Status.QUESTION:
        result.text = address.for_person(result.text, user=request_user(request))
    return result


class ProposalCreateApi(APIView):
    @extend_schema(
        request=PROPOSAL_ORDER,
        responses={
            201: ProposalSerializer,
            200: ProposalSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
        },
        description=(
            "Opens the same confirmation question the chat would ask (201, status rueckfrage); "
            "nothing is written before POST …/proposals/{id}/answer/ with confirm true. 200: "
            "nothing to ask (already so); 404: the rule is not the person's or missing."
        ),
    )
    def post(self, request: Request) -> Response:
        data = ProposalCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        result = proposals.proposal_open(
            user=request_user(request),
            order=proposals.Order(
                action=values["action"],
                directive_id=values.get("directive_id"),
                text=values["text"],
                context=values["context"],
            ),
        )
        result = _shown(request, result)
        if result.status == Status.FAILED:
            error = NotFoundError if result.step == "nicht_gefunden" else ApplicationError
            raise error(result.text, step=result.step)
        code = status.HTTP_201_CREATED if result.status == Status.QUESTION else status.HTTP_200_OK
        return Response(ProposalSerializer(result).data, status=code)


class ProposalAnswerApi(APIView):
    @extend_schema(
        request=ProposalAnswerSerializer,
        responses={200: ProposalSerializer, 400: ErrorSerializer, 404: ErrorSerializer},
        description=(
            "confirm true: the consent click, read by the gate like a typed 'Ja' (executes, "
            "verified and audited); confirm false: 'Abbrechen' (dismissed, nothing changes). "
            "A question answered before or expired answers status fehler, nothing executes."
        ),
    )
    def post(self, request: Request, pending_id: int) -> Response:
        data = ProposalAnswerSerializer(data=request.data)
        if not data.is_valid():
            raise ApplicationError(
                "Die Antwort braucht confirm: true (zustimmen) oder false (abbrechen).",
                step="antwort_unlesbar",
            )
        result = proposals.proposal_answer(
            user=request_user(request),
            pending_id=pending_id,
            consent=data.validated_data["confirm"],
        )
        if result is None:
            raise Http404
        return Response(ProposalSerializer(_shown(request, result)).data)
