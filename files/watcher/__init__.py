"""The watcher: walks released roots read-only and keeps their index by content hash."""

from files.watcher.run import RunReport, index_root_run, root_lock, wants_full_hash
from files.watcher.scan import DryRun, dry_run
from files.watcher.structure import struktur_analysieren

__all__ = [
    "DryRun",
    "RunReport",
    "dry_run",
    "index_root_run",
    "root_lock",
    "struktur_analysieren",
    "wants_full_hash",
]
