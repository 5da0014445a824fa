"""Writes of the file service: releasing, suspending, reactivating and forgetting roots.

Every release goes through the same steps whether it comes from the chat (gate + consent
reader) or from the API/UI (an explicit confirm): the boundary check on the resolved path, the
dry run the person sees, and only then, on consent, the write. Nothing here writes into a
released root; the only file-system access is the read-only dry run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from conversation.models import Character
from files import boundary
from files.models import FileRoot, IndexBlock, IndexEntry
from files.watcher.scan import dry_run
from novaberg.api_errors import (
    ApplicationError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RefusedError,
)

MISSING_TEXT = "Diesen freigegebenen Ordner gibt es nicht."
UNVERIFIED_TEXT = "Die Änderung ließ sich nicht bestätigen; ich melde sie nicht als erledigt."
# Refusals by a rule of access (the fence itself), answered 403; every other refusal is 400.
FORBIDDEN_STEPS = frozenset(
    {"kein_aussenrand", "ausserhalb_aussenrand", "wissenszone", "pfad_geaendert"}
)


@dataclass(frozen=True)
class ReleasePreview:
    ok: bool
    step: str
    reason: str
    resolved_path: str
    dry_run: dict[str, Any] = field(default_factory=dict)
    # (st_dev, st_ino) of the directory the dry run walked: stored on the root as the released
    # directory's identity (DESIGN.md "Files"; files.boundary.root_open compares it).
    identity: tuple[int, int] | None = None

    @property
    def status(self) -> str:
        return "rueckfrage" if self.ok else "abgelehnt"

    def refusal(self) -> RefusedError:
        error = ForbiddenError if self.step in FORBIDDEN_STEPS else RefusedError
        return error(self.reason, step=self.step)


def _globs(value: list[str] | None) -> list[str]:
    return [str(g).strip() for g in (value or []) if str(g).strip()][:50]


def root_release_preview(
    *,
    user: User,
    character: Character,
    raw_path: str,
    include_globs: list[str] | None = None,
    exclude_globs: list[str] | None = None,
) -> ReleasePreview:
    """Resolve, check against the requesting person's boundary, then dry-run. Writes nothing
    anywhere."""
    checked = boundary.check(raw_path, user=user)
    if not checked.ok:
        return ReleasePreview(False, checked.step, checked.reason, checked.resolved, {})
    existing = FileRoot.objects.filter(
        user=user, character=character, path=checked.resolved
    ).first()
    # A root refused as no longer the released directory (``pfad_geaendert``) may be released
    # anew at the same path: the person sees the dry run of what is there now and confirms.
    changed = (
        existing is not None
        and existing.state in {FileRoot.State.ACTIVE, FileRoot.State.SUSPENDED}
        and boundary.root_path_still_valid(existing, user=user).outcome == "pfad_geaendert"
    )
    if existing is not None and existing.state == FileRoot.State.ACTIVE and not changed:
        return ReleasePreview(
            False,
            "schon_freigegeben",
            f"{checked.resolved} ist schon freigegeben.",
            checked.resolved,
        )
    if existing is not None and existing.state == FileRoot.State.SUSPENDED and not changed:
        return ReleasePreview(
            False,
            "stillgelegt",
            f"{checked.resolved} ist freigegeben, aber stillgelegt; "
            "ich kann den Ordner wieder aufnehmen.",
            checked.resolved,
        )
    report = dry_run(
        Path(checked.resolved),
        include=_globs(include_globs),
        exclude=_globs(exclude_globs),
        max_bytes=settings.FILES_MAX_BYTES,
    )
    return ReleasePreview(
        True, "rueckfrage", "", checked.resolved, report.as_json(), report.identity
    )


def _check_eigentum(eigentum: str) -> None:
    if eigentum not in FileRoot.Eigentum.values:
        raise ApplicationError(
            "Wem die Dateien gehören, muss „nutzer“ (dir) oder „figur“ (Nova) sein.",
            step="eigentum_unbekannt",
        )


def _enqueue_index(root_id: int) -> None:
    from files.watcher.runs import index_run_enqueue

    # A waiting IndexRun row now; its task is sent after commit (the row knows the run id).
    index_run_enqueue(root_id=root_id)


@transaction.atomic
def root_request(
    *,
    user: User,
    character: Character,
    raw_path: str,
    eigentum: str,
    include_globs: list[str] | None = None,
    exclude_globs: list[str] | None = None,
) -> tuple[ReleasePreview, FileRoot | None]:
    """API/UI release, step 1: store the dry run as a root in state ``angefragt``.
    Nothing is indexed until ``root_confirm``."""
    _check_eigentum(eigentum)
    preview = root_release_preview(
        user=user,
        character=character,
        raw_path=raw_path,
        include_globs=include_globs,
        exclude_globs=exclude_globs,
    )
    if not preview.ok:
        return preview, None
    root, _ = FileRoot.objects.update_or_create(
        user=user,
        character=character,
        path=preview.resolved_path,
        defaults={
            "eigentum": eigentum,
            "state": FileRoot.State.REQUESTED,
            "include_globs": _globs(include_globs),
            "exclude_globs": _globs(exclude_globs),
            "dry_run": preview.dry_run,
            "file_count_at_release": preview.dry_run.get("files", 0),
            # The directory the person saw counted; None when the dry run could not open it
            # (then the check at confirm records it, files.boundary.root_open).
            "dir_device": preview.identity[0] if preview.identity else None,
            "dir_inode": preview.identity[1] if preview.identity else None,
            # A new release: rows of an earlier one at this path are verified by hash, not
            # kept by the fast path.
            "last_full_hash_at": None,
        },
    )
    return preview, root


def _activate(root: FileRoot, *, user: User) -> FileRoot:
    # Resolve again at consent time: a link swapped since the dry run must not lead out.
    fence = boundary.root_path_still_valid(root, user=user)
    if not fence.ok:
        step = "nicht_gefunden" if fence.outcome == "fehlt" else fence.outcome
        error = ForbiddenError if step in FORBIDDEN_STEPS else RefusedError
        raise error(fence.reason, step=step)
    root.state = FileRoot.State.ACTIVE
    root.released_at = timezone.now()
    root.save(update_fields=["state", "released_at", "changed_at"])
    stored = FileRoot.objects.filter(pk=root.pk).values_list("state", flat=True).first()
    if stored != FileRoot.State.ACTIVE:
        raise ApplicationError(
            "Der Ordner ließ sich nicht freigeben: die Änderung ist nicht gespeichert.",
            step="nicht_verifiziert",
        )
    _enqueue_index(root.pk)
    return root


@transaction.atomic
def root_confirm(*, user: User, root_id: int) -> FileRoot:
    """API/UI release, step 2: the explicit confirm. Idempotent for an active root."""
    root = FileRoot.objects.select_for_update().filter(user=user, pk=root_id).first()
    if root is None:
        raise NotFoundError(MISSING_TEXT, step="keine_wurzel")
    if root.state == FileRoot.State.ACTIVE:
        return root
    if root.state != FileRoot.State.REQUESTED:
        raise ConflictError(
            "Dieser Ordner ist stillgelegt; nimm ihn wieder auf, statt ihn zu bestätigen.",
            step="stillgelegt",
        )
    return _activate(root, user=user)


@transaction.atomic
def root_release(
    *,
    user: User,
    character: Character,
    raw_path: str,
    eigentum: str,
    include_globs: list[str] | None = None,
    exclude_globs: list[str] | None = None,
) -> FileRoot:
    """Chat release after consent: the same checks as ``root_request`` + ``root_confirm``."""
    preview, root = root_request(
        user=user,
        character=character,
        raw_path=raw_path,
        eigentum=eigentum,
        include_globs=include_globs,
        exclude_globs=exclude_globs,
    )
    if root is None:
        raise preview.refusal()
    return _activate(root, user=user)


def _locked_root(user: User, root_id: int) -> FileRoot:
    root = FileRoot.objects.select_for_update().filter(user=user, pk=root_id).first()
    if root is None:
        raise NotFoundError(MISSING_TEXT, step="keine_wurzel")
    return root


@transaction.atomic
def root_suspend(*, user: User, root_id: int) -> FileRoot:
    """No longer watched: the rows stay, they are not searched, the watcher skips the root."""
    root = _locked_root(user, root_id)
    root.state = FileRoot.State.SUSPENDED
    root.save(update_fields=["state", "changed_at"])
    if FileRoot.objects.filter(pk=root.pk).values_list("state", flat=True).first() != (
        FileRoot.State.SUSPENDED
    ):
        raise ApplicationError(
            "Das Stilllegen ließ sich nicht speichern.", step="nicht_verifiziert"
        )
    return root


@transaction.atomic
def root_reactivate(*, user: User, root_id: int) -> FileRoot:
    """Back to active; the boundary is checked again (it may have changed meanwhile)."""
    root = _locked_root(user, root_id)
    if root.state == FileRoot.State.ACTIVE:
        return root
    return _activate(root, user=user)


@dataclass(frozen=True)
class ForgetReport:
    path: str
    entries: int
    blocks: int


@transaction.atomic
def root_forget(*, user: User, root_id: int) -> ForgetReport:
    """Delete the root, its index rows and their summaries, keywords and embeddings.
    The files themselves are not touched."""
    root = _locked_root(user, root_id)
    blocks = IndexBlock.objects.filter(entry__root=root).delete()[0]
    entries = IndexEntry.objects.filter(root=root).delete()[0]
    path = root.path
    root.delete()
    if (
        FileRoot.objects.filter(pk=root_id).exists()
        or IndexEntry.objects.filter(root_id=root_id).exists()
    ):
        raise ApplicationError(
            "Das Vergessen ließ sich nicht bestätigen.", step="nicht_verifiziert"
        )
    return ForgetReport(path, entries, blocks)


@transaction.atomic
def root_index_enqueue(*, user: User, root_id: int) -> FileRoot:
    root = _locked_root(user, root_id)
    if root.state != FileRoot.State.ACTIVE:
        raise ConflictError("Nur ein aktiver Ordner wird gelesen.", step="nicht_aktiv")
    _enqueue_index(root.pk)
    return root
