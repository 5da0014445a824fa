"""REST endpoints for released roots (DESIGN.md "Interfaces"). Thin: parse, authorise by the
requesting person, call one service, serialise. Another person's root answers 404."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversation.services import character_default
from files import selectors, services
from files.models import FileRoot


def root_json(root: FileRoot) -> dict[str, Any]:
    progress = root.progress or {}
    counts = root.last_counts or {}
    return {
        "id": root.pk,
        "path": root.path,
        "eigentum": root.eigentum,
        "state": root.state,
        "file_count_at_release": root.file_count_at_release,
        "dry_run": root.dry_run,
        "progress": {
            "done": int(progress.get("done", 0)),
            "total": int(progress.get("total", 0)),
            "running": bool(progress.get("running", False)),
        },
        "counts": {
            "new": counts.get("new", 0),
            "changed": counts.get("changed", 0),
            "unchanged": counts.get("unchanged", 0),
            "gone": counts.get("gone", 0),
            "skipped": counts.get("skipped", {}),
            "errors": counts.get("errors", 0),
            "error_steps": counts.get("error_steps", {}),
            "notes": counts.get("notes", {}),
            "root_missing": bool(counts.get("root_missing", False)),
        },
        "last_error": root.last_error,
        "last_run_finished_at": root.last_run_finished_at,
        "created_at": root.created_at,
    }


def _root_or_404(request: Request, root_id: int) -> FileRoot:
    root = selectors.root_get(user=request.user, root_id=root_id)
    if root is None:
        raise Http404
    return root


class RootListCreateApi(APIView):
    class RootReleaseSerializer(serializers.Serializer):
        path = serializers.CharField(allow_blank=True, trim_whitespace=False)
        eigentum = serializers.ChoiceField(choices=FileRoot.Eigentum.choices)
        include_globs = serializers.ListField(child=serializers.CharField(), required=False)
        exclude_globs = serializers.ListField(child=serializers.CharField(), required=False)

    @extend_schema(operation_id="roots_list", responses={200: dict})
    def get(self, request: Request) -> Response:
        return Response([root_json(r) for r in selectors.root_list(user=request.user)])

    @extend_schema(request=RootReleaseSerializer, responses={201: dict, 400: dict, 403: dict})
    def post(self, request: Request) -> Response:
        data = self.RootReleaseSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        preview, root = services.root_request(
            user=request.user,
            character=character_default(),
            raw_path=data.validated_data["path"],
            eigentum=data.validated_data["eigentum"],
            include_globs=data.validated_data.get("include_globs"),
            exclude_globs=data.validated_data.get("exclude_globs"),
        )
        if root is None:
            raise preview.refusal()
        return Response(
            {
                "id": root.pk,
                "resolved_path": preview.resolved_path,
                "file_count": preview.dry_run.get("files", 0),
                "total_bytes": preview.dry_run.get("total_bytes", 0),
                "skipped": preview.dry_run.get("skipped", {}),
                "eigentum": root.eigentum,
                "status": "rueckfrage",
            },
            status=status.HTTP_201_CREATED,
        )


class RootDetailApi(APIView):
    @extend_schema(responses={200: dict})
    def get(self, request: Request, root_id: int) -> Response:
        return Response(root_json(_root_or_404(request, root_id)))


class RootConfirmApi(APIView):
    @extend_schema(request=None, responses={200: dict})
    def post(self, request: Request, root_id: int) -> Response:
        _root_or_404(request, root_id)
        root = services.root_confirm(user=request.user, root_id=root_id)
        return Response({"id": root.pk, "state": root.state})


class RootIndexApi(APIView):
    @extend_schema(request=None, responses={202: dict})
    def post(self, request: Request, root_id: int) -> Response:
        _root_or_404(request, root_id)
        root = services.root_index_enqueue(user=request.user, root_id=root_id)
        return Response({"id": root.pk, "status": "laufend"}, status=status.HTTP_202_ACCEPTED)


class _ConfirmedActionApi(APIView):
    """Suspend / reactivate / forget: the request body must carry ``{"confirm": true}`` (the
    API's explicit consent); without it the answer is the question, and nothing is written."""

    class RootActionSerializer(serializers.Serializer):
        confirm = serializers.BooleanField(required=False, default=False)

    question = ""

    def act(self, request: Request, root_id: int) -> dict[str, Any]:
        raise NotImplementedError

    @extend_schema(request=RootActionSerializer, responses={200: dict})
    def post(self, request: Request, root_id: int) -> Response:
        root = _root_or_404(request, root_id)
        data = self.RootActionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if not data.validated_data["confirm"]:
            return Response(
                {"id": root.pk, "status": "rueckfrage", "question": self.question % root.path}
            )
        return Response(self.act(request, root_id))


class RootSuspendApi(_ConfirmedActionApi):
    question = "Soll ich %s stilllegen? Die Indexzeilen bleiben, werden aber nicht durchsucht."

    def act(self, request: Request, root_id: int) -> dict[str, Any]:
        root = services.root_suspend(user=request.user, root_id=root_id)
        return {"id": root.pk, "state": root.state}


class RootReactivateApi(_ConfirmedActionApi):
    question = "Soll ich %s wieder aufnehmen?"

    def act(self, request: Request, root_id: int) -> dict[str, Any]:
        root = services.root_reactivate(user=request.user, root_id=root_id)
        return {"id": root.pk, "state": root.state}


class RootForgetApi(_ConfirmedActionApi):
    question = (
        "Soll ich %s vergessen? Alle Indexzeilen mit Zusammenfassungen und Einbettungen "
        "werden gelöscht; die Dateien bleiben unberührt."
    )

    def act(self, request: Request, root_id: int) -> dict[str, Any]:
        report = services.root_forget(user=request.user, root_id=root_id)
        return {"id": root_id, "state": "vergessen", "entries_deleted": report.entries}
