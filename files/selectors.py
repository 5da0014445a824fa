"""Reads of the file service. Every read takes the person (and the character where it matters):
there is no helper that loads a FileRoot by id alone."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet

from conversation.models import Character
from files.boundary import resolve_path
from files.models import FileRoot, IndexEntry

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class RootCounts(TypedDict):
    present_count: int
    gone_count: int


def root_list(
    *, user: User, character: Character | None = None
) -> QuerySet[WithAnnotations[FileRoot, RootCounts]]:
    roots = FileRoot.objects.filter(user=user)
    if character is not None:
        roots = roots.filter(character=character)
    return (
        roots.annotate(
            present_count=Count("entries", filter=Q(entries__state=IndexEntry.State.PRESENT)),
            gone_count=Count("entries", filter=Q(entries__state=IndexEntry.State.GONE)),
        )
        .select_related("last_run")
        .order_by("created_at", "id")
    )


def root_get(*, user: User, root_id: int) -> FileRoot | None:
    """The person's root, or None (another person's root and a missing one look the same)."""
    return FileRoot.objects.filter(user=user, pk=root_id).first()


def root_find(*, user: User, character: Character, raw_path: str) -> FileRoot | None:
    """The root a chat order names: by resolved path, else by a unique folder name."""
    roots = list(FileRoot.objects.filter(user=user, character=character))
    resolved = str(resolve_path(raw_path)) if raw_path.strip() else ""
    for root in roots:
        if root.path == resolved:
            return root
    name = Path(raw_path.strip().rstrip("/")).name
    by_name = [r for r in roots if Path(r.path).name == name]
    return by_name[0] if len(by_name) == 1 else None


def root_entry_counts(*, root: FileRoot) -> dict[str, Any]:
    rows = IndexEntry.objects.filter(root=root).values("state").annotate(n=Count("id"))
    by_state = {r["state"]: r["n"] for r in rows}
    return {
        "present": by_state.get(IndexEntry.State.PRESENT, 0),
        "gone": by_state.get(IndexEntry.State.GONE, 0),
        "archived": IndexEntry.objects.filter(root=root, archived=True).count(),
    }


def searchable_entries(*, user: User, character: Character) -> QuerySet[IndexEntry]:
    """Rows that may be searched for the pair: present files of *active* roots only.

    A suspended root is "no longer watched": its rows stay but are not searched. A ``fort``
    row is a file that is gone."""
    return IndexEntry.objects.filter(
        root__user=user,
        root__character=character,
        root__state=FileRoot.State.ACTIVE,
        state=IndexEntry.State.PRESENT,
    )
