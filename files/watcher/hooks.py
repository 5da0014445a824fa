"""Named points of a watcher run where a test can step in (``NOVABERG_FILES_TEST_HOOK``).

Production code only calls ``hook(point)``; whatever waits or fails lives in test code
(e.g. ``files.tests.hooks:slow_files`` pauses per file so a test can kill a real worker in the
middle of a run). Points: ``nach_datei`` (one file of the walk handled), ``nach_schreiben``
(one learned file committed).
"""

from __future__ import annotations

import importlib

from django.conf import settings

AFTER_FILE = "nach_datei"
AFTER_WRITE = "nach_schreiben"


def hook(point: str) -> None:
    spec: str = settings.FILES_TEST_HOOK
    if not spec:
        return
    module, _, name = spec.partition(":")
    # Only test modules can be hooked in: the setting must not become a way to load code.
    if not module.startswith("files.tests."):
        return
    getattr(importlib.import_module(module), name)(point)
