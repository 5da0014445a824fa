"""REST endpoints for released roots (DESIGN.md "Interfaces"). Thin: parse, authorise by the
requesting person, call one service, serialise. Another person's root answers 404."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversation.services import character_default
from conversation.vocabulary import Status
from files import selectors, services
from files.boundary import RootPathCheck, root_path_still_valid
from files.models import FileRoot, IndexRun
from files.watcher.runs import run_was_unsent
from novaberg import fields as strict
from novaberg import health
from novaberg.api_errors import (
    ApplicationError,
    BusyError,
    ConflictError,
    ErrorSerializer,
    ForbiddenError,
    NotFoundError,
    RefusedError,
)
from novaberg.auth import request_user


class ProgressSerializer(serializers.Serializer[dict[str, Any]]):
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    running = serializers.BooleanField()


class SkippedFileSerializer(serializers.Serializer[dict[str, str]]):
    """One skipped file by name (the first 200 of a run or a dry run; the counts are complete)."""

    path = serializers.CharField()
    reason = serializers.CharField(help_text="verborgen, binaer, zu_gross, format, …")


class CountsSerializer(serializers.Serializer[dict[str, Any]]):
    """Counts of the root's last watcher run."""

    new = serializers.IntegerField()
    changed = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    gone = serializers.IntegerField()
    skipped = serializers.DictField(child=serializers.IntegerField(), help_text="{reason: n}")
    skipped_files = SkippedFileSerializer(many=True)
    errors = serializers.IntegerField()  # type: ignore[assignment]  # a field, not .errors
    error_steps = serializers.DictField(child=serializers.IntegerField(), help_text="{step: n}")
    notes = serializers.DictField(child=serializers.IntegerField(), help_text="{note: n}")
    root_missing = serializers.BooleanField()


class RootProblemSerializer(serializers.Serializer[dict[str, str]]):
    """Why a released root is not read right now (checked live at every answer)."""

    step = serializers.CharField(help_text="pfad_geaendert, ausserhalb_aussenrand, …")
    reason = serializers.CharField()


class RunSerializer(serializers.ModelSerializer[IndexRun]):
    """The run whose progress and counts the root shows (one IndexRun row, published together)."""

    class Meta:
        model = IndexRun
        fields = ["id", "state", "started_at", "finished_at", "heartbeat_at", "note"]


class RootSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    path = serializers.CharField()
    eigentum = serializers.ChoiceField(choices=FileRoot.Eigentum.choices)
    state = serializers.ChoiceField(choices=FileRoot.State.choices)
    file_count_at_release = serializers.IntegerField()
    dry_run = serializers.JSONField(help_text="files, skipped {reason: n}, total_bytes")
    progress = serializers.SerializerMethodField()
    counts = serializers.SerializerMethodField()
    problem = serializers.SerializerMethodField()
    missing = serializers.SerializerMethodField()
    last_error = serializers.SerializerMethodField()
    last_run_finished_at = serializers.DateTimeField(allow_null=True)
    run = RunSerializer(source="last_run", allow_null=True, read_only=True)
    created_at = serializers.DateTimeField()

    def _check(self, root: FileRoot) -> RootPathCheck:
        # DESIGN.md "Files": the boundary and the resolved path are checked again; the answer
        # says why a root is not followed, even before the next read or watcher run.
        # One check per root and answer (a many=True child serializes every root).
        cache: dict[int, RootPathCheck] = self.__dict__.setdefault("_fence_cache", {})
        if root.pk not in cache:
            asking = self.context.get("user")
            user = asking if asking is not None and asking.pk == root.user_id else root.user
            cache[root.pk] = root_path_still_valid(root, user=user)
        return cache[root.pk]

    def _fence(self, root: FileRoot) -> dict[str, str] | None:
        fence = self._check(root)
        return {"step": fence.outcome, "reason": fence.reason} if fence.refused else None

    @extend_schema_field(RootProblemSerializer(allow_null=True))
    def get_problem(self, root: FileRoot) -> dict[str, str] | None:
        return self._fence(root)

    @extend_schema_field(serializers.BooleanField(help_text="the folder is gone right now"))
    def get_missing(self, root: FileRoot) -> bool:
        # Checked live, like ``problem``: the page shows a vanished folder before the next run.
        return self._check(root).outcome == "fehlt"

    @extend_schema_field(serializers.CharField(allow_blank=True))
    def get_last_error(self, root: FileRoot) -> str:
        problem = self._fence(root)
        return problem["reason"] if problem is not None else root.last_error

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, root: FileRoot) -> dict[str, Any]:
        progress = root.progress or {}
        return {
            "done": int(progress.get("done", 0)),
            "total": int(progress.get("total", 0)),
            "running": bool(progress.get("running", False)),
        }

    @extend_schema_field(CountsSerializer)
    def get_counts(self, root: FileRoot) -> dict[str, Any]:
        counts = root.last_counts or {}
        return {
            "new": counts.get("new", 0),
            "changed": counts.get("changed", 0),
            "unchanged": counts.get("unchanged", 0),
            "gone": counts.get("gone", 0),
            "skipped": counts.get("skipped", {}),
            "skipped_files": counts.get("skipped_files", []),
            "errors": counts.get("errors", 0),
            "error_steps": counts.get("error_steps", {}),
            "notes": counts.get("notes", {}),
            "root_missing": bool(counts.get("root_missing", False)),
        }


@extend_schema_field(
    {
        "type": "string",
        "pattern": "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$",
        "description": "absolute, or relative to the boundary; no NUL, not only spaces",
    }
)
class ReleasePathField(strict.StrictCharField):
    """Blank is let through to the boundary check, which names it (step ``kein_pfad``)."""


class RootReleaseSerializer(serializers.Serializer[dict[str, Any]]):
    path = ReleasePathField(allow_blank=True, trim_whitespace=False)
    eigentum = serializers.ChoiceField(choices=FileRoot.Eigentum.choices)
    include_globs = serializers.ListField(child=strict.StrictCharField(), required=False)
    exclude_globs = serializers.ListField(child=strict.StrictCharField(), required=False)


class ReleasePreviewSerializer(serializers.Serializer[dict[str, Any]]):
    """The answer to a release: what the dry run found; the root waits for its confirm."""

    id = serializers.IntegerField()
    resolved_path = serializers.CharField()
    file_count = serializers.IntegerField()
    total_bytes = serializers.IntegerField()
    skipped = serializers.DictField(child=serializers.IntegerField(), help_text="{reason: n}")
    skipped_files = SkippedFileSerializer(many=True)
    eigentum = serializers.ChoiceField(choices=FileRoot.Eigentum.choices)
    status = serializers.ChoiceField(choices=[Status.QUESTION.value])


class RootStateSerializer(serializers.Serializer[FileRoot]):
    id = serializers.IntegerField()
    state = serializers.ChoiceField(choices=FileRoot.State.choices)


class RootIndexSerializer(serializers.Serializer[dict[str, Any]]):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=[Status.RUNNING.value])


class RootActionSerializer(serializers.Serializer[dict[str, Any]]):
    confirm = strict.StrictBooleanField(required=False, default=False)


class RootActionAnswerSerializer(serializers.Serializer[dict[str, Any]]):
    """Without ``confirm: true`` the answer is the question (``status: rueckfrage``); with it,
    the root's new state (``vergessen``: gone, with the index rows deleted)."""

    id = serializers.IntegerField()
    # A plain string here: an enum of the one word would collide with the release's in the
    # schema's enum names.
    status = serializers.CharField(required=False, help_text='"rueckfrage": this is the question')
    question = serializers.CharField(required=False)
    state = serializers.CharField(required=False)
    entries_deleted = serializers.IntegerField(required=False)


# A confirm or reactivation of a root refused for what the schema cannot state: the folder is
# gone (404), hidden (403, a rule of access), or suspended (409); the body keeps its step and
# sentence. The release itself (POST /api/roots/) keeps the 400/403 of DESIGN.md "Interfaces".
MISSING_STEPS = frozenset(
    {"nicht_gefunden", "kein_verzeichnis", "pfad_unlesbar", "pfad_zu_lang", "name_zu_lang"}
)
CONFLICT_STEPS = frozenset({"schon_freigegeben", "stillgelegt"})


def _refusal(exc: RefusedError) -> ApplicationError:
    if isinstance(exc, ForbiddenError):
        return exc
    error: type[ApplicationError] | None = None
    if exc.step in MISSING_STEPS:
        error = NotFoundError
    elif exc.step in CONFLICT_STEPS:
        error = ConflictError
    elif exc.step == "verborgen":
        error = ForbiddenError
    if error is None:
        return exc
    return error(exc.message, step=exc.step, status=exc.status)


def _root_or_404(request: Request, root_id: int) -> FileRoot:
    root = selectors.root_get(user=request_user(request), root_id=root_id)
    if root is None:
        raise Http404
    return root


class RootListCreateApi(APIView):
    @extend_schema(operation_id="roots_list", responses={200: RootSerializer(many=True)})
    def get(self, request: Request) -> Response:
        user = request_user(request)
        roots = selectors.root_list(user=user)
        return Response(RootSerializer(roots, many=True, context={"user": user}).data)

    @extend_schema(
        request=RootReleaseSerializer,
        responses={201: ReleasePreviewSerializer, 400: ErrorSerializer, 403: ErrorSerializer},
        description="403: outside the boundary or the knowledge zone; 400 (step and German "
        "reason in the body): no such folder, a file, hidden, already released or suspended.",
    )
    def post(self, request: Request) -> Response:
        data = RootReleaseSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        preview, root = services.root_request(
            user=request_user(request),
            character=character_default(),
            raw_path=data.validated_data["path"],
            eigentum=data.validated_data["eigentum"],
            include_globs=data.validated_data.get("include_globs"),
            exclude_globs=data.validated_data.get("exclude_globs"),
        )
        if root is None:
            # DESIGN.md "Interfaces": a refused release answers 400 or, for a rule of access
            # (outside the boundary, the knowledge zone), 403 — scripts rely on these two.
            raise preview.refusal()
        answer = {
            "id": root.pk,
            "resolved_path": preview.resolved_path,
            "file_count": preview.dry_run.get("files", 0),
            "total_bytes": preview.dry_run.get("total_bytes", 0),
            "skipped": preview.dry_run.get("skipped", {}),
            "skipped_files": preview.dry_run.get("skipped_files", []),
            "eigentum": root.eigentum,
            "status": Status.QUESTION.value,
        }
        return Response(ReleasePreviewSerializer(answer).data, status=status.HTTP_201_CREATED)


class RootDetailApi(APIView):
    @extend_schema(responses={200: RootSerializer})
    def get(self, request: Request, root_id: int) -> Response:
        root = _root_or_404(request, root_id)
        return Response(RootSerializer(root, context={"user": request_user(request)}).data)


class RootConfirmApi(APIView):
    @extend_schema(
        request=None,
        responses={200: RootStateSerializer, 403: ErrorSerializer, 409: ErrorSerializer},
        description="404 also when the folder is gone since the release; 409: suspended.",
    )
    def post(self, request: Request, root_id: int) -> Response:
        _root_or_404(request, root_id)
        try:
            root = services.root_confirm(user=request_user(request), root_id=root_id)
        except RefusedError as exc:
            raise _refusal(exc) from exc
        return Response(RootStateSerializer(root).data)


INDEX_BROKER_DOWN = (
    "Der Ordner kann gerade nicht neu gelesen werden, weil der Auftragsdienst nicht antwortet. "
    "Bitte in einer Minute erneut versuchen."
)


class RootIndexApi(APIView):
    @extend_schema(
        request=None,
        responses={202: RootIndexSerializer, 409: ErrorSerializer, 503: ErrorSerializer},
    )
    def post(self, request: Request, root_id: int) -> Response:
        _root_or_404(request, root_id)
        # A stalled broker held this request for as long as it stalled (Celery's publish
        # waits and retries): asked first, it is a 503 within a second and no run waits.
        if not health.broker_answers():
            raise BusyError(INDEX_BROKER_DOWN, step="auftragsdienst_nicht_erreichbar")
        root = services.root_index_enqueue(user=request_user(request), root_id=root_id)
        newest = IndexRun.objects.filter(root_id=root.pk).order_by("-pk").first()
        if newest is not None and run_was_unsent(run_id=newest.pk):
            # The broker stalled after it answered: the task was not sent on commit and the
            # run is settled as abgebrochen (files.watcher.runs._send).
            raise BusyError(INDEX_BROKER_DOWN, step="auftragsdienst_nicht_erreichbar")
        answer = {"id": root.pk, "status": Status.RUNNING.value}
        return Response(RootIndexSerializer(answer).data, status=status.HTTP_202_ACCEPTED)


class _ConfirmedActionApi(APIView):
    """Suspend / reactivate / forget: the request body must carry ``{"confirm": true}`` (the
    API's explicit consent); without it the answer is the question, and nothing is written."""

    question = ""

    def act(self, request: Request, root_id: int) -> dict[str, Any]:
        raise NotImplementedError

    @extend_schema(
        request=RootActionSerializer,
        responses={200: RootActionAnswerSerializer, 403: ErrorSerializer},
        description="Reactivating a folder that is gone since its release answers 404.",
    )
    def post(self, request: Request, root_id: int) -> Response:
        root = _root_or_404(request, root_id)
        data = RootActionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if not data.validated_data["confirm"]:
            answer = {
                "id": root.pk,
                "status": Status.QUESTION.value,
                "question": self.question % root.path,
            }
        else:
            answer = self.act(request, root_id)
        return Response(RootActionAnswerSerializer(answer).data)


class RootSuspendApi(_ConfirmedActionApi):
    question = "Soll ich %s stilllegen? Die Indexzeilen bleiben, werden aber nicht durchsucht."

    def act(self, request: Request, root_id: int) -> dict[str, Any]:
        root = services.root_suspend(user=request_user(request), root_id=root_id)
        return {"id": root.pk, "state": root.state}


class RootReactivateApi(_ConfirmedActionApi):
    question = "Soll ich %s wieder aufnehmen?"

    def act(self, request: Request, root_id: int) -> dict[str, Any]:
        try:
            root = services.root_reactivate(user=request_user(request), root_id=root_id)
        except RefusedError as exc:
            raise _refusal(exc) from exc
        return {"id": root.pk, "state": root.state}


class RootForgetApi(_ConfirmedActionApi):
    question = (
        "Soll ich %s vergessen? Alle Indexzeilen mit Zusammenfassungen und Einbettungen "
        "werden gelöscht; die Dateien bleiben unberührt."
    )

    def act(self, request: Request, root_id: int) -> dict[str, Any]:
        report = services.root_forget(user=request_user(request), root_id=root_id)
        return {"id": root_id, "state": "vergessen", "entries_deleted": report.entries}
