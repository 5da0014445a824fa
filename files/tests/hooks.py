"""Test hooks for a real worker (``NOVABERG_FILES_TEST_HOOK=files.tests.hooks:slow_files``).

``slow_files`` pauses ``NOVABERG_FILES_TEST_HOOK_DELAY_S`` (default 0.25 s) after each file of
a run, so a test can kill the worker in the middle of it. The waiting is here, in test code;
production code only calls the hook (files/watcher/hooks.py).
"""

from __future__ import annotations

import os
import time

from files.watcher.hooks import AFTER_FILE


def slow_files(point: str) -> None:
    if point == AFTER_FILE:
        time.sleep(float(os.environ.get("NOVABERG_FILES_TEST_HOOK_DELAY_S", "0.25")))
