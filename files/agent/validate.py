"""Step 2 of the files agent: check an order against the boundary and the person's roots, and
word the gate question (resolved path, file count, skips by reason, total size)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User

from conversation.models import Character
from conversation.vocabulary import Status
from files import selectors, services
from files.agent.classify import Order
from files.models import FileRoot

SKIP_LABELS = {
    "verborgen": "verborgen",
    "binaer": "binär",
    "zu_gross": "zu groß",
    "link_nach_aussen": "Verknüpfung nach außen",
    "link_innen": "Verknüpfung nach innen",
    "link_kaputt": "Verknüpfung ohne Ziel",
    "link_schleife": "Verknüpfungsschleife",
    "format": "Format nicht lesbar",
    "ausgeschlossen": "ausgeschlossen",
    "nicht_lesbar": "nicht lesbar",
    "verschwunden": "verschwunden",
    "pfad_unlesbar": "Name nicht lesbar",
    "keine_datei": "keine Datei",
}

OWNER_QUESTION = (
    "Gehören die Dateien dir oder sind sie Novas eigenes Material? "
    "Antworte mit „meine“ oder „Novas“."
)


@dataclass(frozen=True)
class Validation:
    ok: bool
    # ok: the gate asks (rueckfrage); else what the turn says: rejected (a rule), fehler, or
    # abgeschlossen (nothing to ask: already so).
    status: Status
    step: str = ""
    text: str = ""
    root: FileRoot | None = None
    payload: dict[str, Any] = field(default_factory=dict)


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("Bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return (
                f"{int(size)} {unit}" if unit == "Bytes" else f"{size:.1f} {unit}".replace(".", ",")
            )
        size /= 1024
    return f"{n} Bytes"


def describe_skips(skipped: dict[str, int]) -> str:
    if not skipped:
        return "keine"
    return ", ".join(f"{n} {SKIP_LABELS.get(reason, reason)}" for reason, n in skipped.items())


def describe_dry_run(path: str, dry: dict[str, Any]) -> str:
    files = dry.get("files", 0)
    noun = "Datei" if files == 1 else "Dateien"
    return (
        f"Ordner {path}: {files} {noun} würde ich lesen "
        f"({human_size(int(dry.get('total_bytes', 0)))}); "
        f"übersprungen: {describe_skips(dict(dry.get('skipped') or {}))}."
    )


def index_rows(n: int) -> str:
    """ "seine 1 Indexzeile" reads wrong: one row is "seine eine Indexzeile"."""
    return "seine eine Indexzeile" if n == 1 else f"seine {n} Indexzeilen"


def owner_label(eigentum: str) -> str:
    return "dein Material" if eigentum == FileRoot.Eigentum.NUTZER else "Novas eigenes Material"


def validate_release(*, user: User, character: Character, order: Order) -> Validation:
    if not order.path:
        return Validation(
            False,
            Status.FAILED,
            "kein_pfad",
            "Welchen Ordner soll ich freigeben? Nenne mir den Pfad.",
        )
    preview = services.root_release_preview(user=user, character=character, raw_path=order.path)
    if not preview.ok:
        return Validation(False, Status.REJECTED, preview.step, preview.reason)
    question = f"{describe_dry_run(preview.resolved_path, preview.dry_run)} {OWNER_QUESTION}"
    return Validation(
        True,
        Status.QUESTION,
        text=question,
        payload={
            "action": "release",
            "raw_path": order.path,
            "path": preview.resolved_path,
            "dry_run": preview.dry_run,
        },
    )


def validate_root_action(*, user: User, character: Character, order: Order) -> Validation:
    root = selectors.root_find(user=user, character=character, raw_path=order.path)
    if root is None:
        named = f" „{order.path}“" if order.path else ""
        return Validation(
            False,
            Status.FAILED,
            "keine_wurzel",
            f"Ich finde keinen freigegebenen Ordner{named}. "
            "Frag mich „Welche Ordner hast du?“, dann nenne ich dir alle.",
        )
    if order.action == "suspend" and root.state == FileRoot.State.SUSPENDED:
        return Validation(
            False, Status.DONE, "schon_stillgelegt", f"{root.path} ist schon stillgelegt."
        )
    if order.action == "reactivate" and root.state == FileRoot.State.ACTIVE:
        return Validation(False, Status.DONE, "schon_aktiv", f"{root.path} ist schon aktiv.")
    counts = selectors.root_entry_counts(root=root)
    rows = counts["present"] + counts["gone"]
    if order.action == "suspend":
        question = (
            f"Soll ich den Ordner {root.path} stilllegen? Ich lese ihn dann nicht mehr und "
            f"suche nicht mehr darin; {index_rows(rows)} "
            f"{'bleibt' if rows == 1 else 'bleiben'} erhalten. (ja/nein)"
        )
    elif order.action == "forget":
        question = (
            f"Soll ich den Ordner {root.path} vergessen? Dabei lösche ich {index_rows(rows)} "
            "mit ihren Zusammenfassungen, Schlagwörtern und Einbettungen; "
            "die Dateien selbst bleiben unberührt. (ja/nein)"
        )
    else:
        question = (
            f"Soll ich den Ordner {root.path} wieder aufnehmen? Ich lese ihn dann wieder und "
            "suche wieder darin. (ja/nein)"
        )
    return Validation(
        True,
        Status.QUESTION,
        text=question,
        root=root,
        payload={"action": order.action, "root_id": root.pk, "path": root.path},
    )


def read_owner(text: str) -> str | None:
    """Read the answer to the owner question: "meine"/"mir" → nutzer, "Novas"/"dir" → figur."""
    words = {w.strip(".,;:!?\"'„“").lower() for w in text.split()}
    person = words & {"meine", "meins", "mir", "mein", "ich", "meiner"}
    nova = words & {"novas", "nova", "deine", "deins", "dir", "dein", "deiner", "ihre", "ihr"}
    if person and not nova:
        return FileRoot.Eigentum.NUTZER
    if nova and not person:
        return FileRoot.Eigentum.FIGUR
    return None
