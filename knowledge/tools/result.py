"""The typed result every tool of the write layer returns (never an exception for an expected
failure): a status, a named step, a German sentence for the person, and what was read or
written."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    OK = "ok"
    ABGELEHNT = "abgelehnt"  # the zone check refused the target: the wall did its job
    FEHLER = "fehler"


class Step(StrEnum):
    """Named failures of the tools (the target check's own names come from knowledge.zone)."""

    DATEI_FEHLT = "datei_fehlt"
    DATEI_EXISTIERT = "datei_existiert"
    NICHT_LESBAR = "nicht_lesbar"
    ZU_GROSS = "zu_gross"
    KEIN_BLOCK = "kein_block"
    BLOCK_MEHRDEUTIG = "block_mehrdeutig"
    KOPFBEREICH = "kopfbereich"
    TEXT_NICHT_GEFUNDEN = "text_nicht_gefunden"
    TEXT_MEHRDEUTIG = "text_mehrdeutig"
    LEERER_TEXT = "leerer_text"
    TEXT_ZU_LANG = "text_zu_lang"
    MARKENFORM = "markenform_im_inhalt"
    KEINE_VERSION = "keine_versionszeile"
    UNBEKANNTES_FELD = "unbekanntes_feld"
    ZEILEN_UNGUELTIG = "zeilen_ungueltig"
    ORT_UNKLAR = "ort_unklar"
    GESPERRT = "gesperrt"
    ZIEL_GEAENDERT = "ziel_geaendert"
    SCHREIBEN = "schreiben"
    NACHLESEN = "nachlesen"
    NICHT_NUR_DER_BLOCK = "nicht_nur_der_block"
    BIBLIOTHEK = "bibliothek"
    EINBETTUNG = "einbettung"
    KEINE_BEARBEITUNG = "keine_bearbeitung"
    SCHON_ZURUECKGENOMMEN = "schon_zurueckgenommen"
    BLOCK_VERAENDERT = "block_veraendert"
    DATEI_VERAENDERT = "datei_seitdem_geaendert"


@dataclass
class ToolResult:
    status: Status
    step: str = ""
    message: str = ""  # German, for the person
    path: str = ""  # relative to the pair's zone folder
    version: str = ""
    content_hash: str = ""
    text: str = ""
    line_start: int = 0
    line_end: int = 0
    blocks: list[dict[str, Any]] = field(default_factory=list)
    matches: list[dict[str, Any]] = field(default_factory=list)
    cut: bool = False
    edit_id: int | None = None
    mark: str = ""
    entry_id: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    @property
    def edit_pk(self) -> int:
        """The edit row of a successful write (a result without one is a caller's error)."""
        if self.edit_id is None:
            raise LookupError(f"no edit row: {self.status}/{self.step}")
        return self.edit_id

    @property
    def entry_pk(self) -> int:
        """The library row of a successful write (a result without one is a caller's error)."""
        if self.entry_id is None:
            raise LookupError(f"no library row: {self.status}/{self.step}")
        return self.entry_id


def fail(step: str, message: str, *, path: str = "", **extra: Any) -> ToolResult:
    return ToolResult(status=Status.FEHLER, step=str(step), message=message, path=path, **extra)


def refused(step: str, message: str, *, path: str = "") -> ToolResult:
    return ToolResult(status=Status.ABGELEHNT, step=str(step), message=message, path=path)
