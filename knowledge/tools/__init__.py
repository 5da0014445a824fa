"""The write layer of the knowledge zone (seed 004 §3a.1): every tool, one typed result.

Read: ``datei_lesen``, ``struktur_analysieren``, ``block_lesen``, ``zeilen_lesen``,
``datei_grep``. Write: ``datei_schreiben``, ``block_ersetzen``, ``block_anfuegen``,
``block_einfuegen``, ``metadaten_aktualisieren``, ``str_replace_in_block``. Undo:
``knowledge_edit_undo``, ``knowledge_mark_undo``. The target check ``schreibziel_pruefen``
lives in ``knowledge.zone``.
"""

from knowledge.tools.edit import (
    PERSON,
    EditCause,
    block_anfuegen,
    block_einfuegen,
    block_ersetzen,
    datei_schreiben,
    metadaten_aktualisieren,
    settle_file,
    str_replace_in_block,
)
from knowledge.tools.read import (
    block_lesen,
    datei_grep,
    datei_lesen,
    struktur_analysieren,
    zeilen_lesen,
)
from knowledge.tools.result import Status, Step, ToolResult
from knowledge.tools.undo import knowledge_edit_undo, knowledge_mark_undo

__all__ = [
    "PERSON",
    "EditCause",
    "Status",
    "Step",
    "ToolResult",
    "block_anfuegen",
    "block_einfuegen",
    "block_ersetzen",
    "block_lesen",
    "datei_grep",
    "datei_lesen",
    "datei_schreiben",
    "knowledge_edit_undo",
    "knowledge_mark_undo",
    "metadaten_aktualisieren",
    "settle_file",
    "str_replace_in_block",
    "struktur_analysieren",
    "zeilen_lesen",
]
