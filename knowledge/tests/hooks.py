"""Test hooks for a real worker (``NOVABERG_KNOWLEDGE_TEST_HOOK=knowledge.tests.hooks:pause_once``).

At the point named in ``NOVABERG_KNOWLEDGE_TEST_HOOK_POINT`` the hook leaves a file in
``NOVABERG_KNOWLEDGE_TEST_HOOK_DIR`` and waits there to be killed — once: a rerun after the
kill passes through. The waiting is here, in test code; production code only calls the hook.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def pause_once(point: str) -> None:
    if point != os.environ.get("NOVABERG_KNOWLEDGE_TEST_HOOK_POINT"):
        return
    reached = Path(os.environ["NOVABERG_KNOWLEDGE_TEST_HOOK_DIR"]) / f"erreicht-{point}"
    if reached.exists():
        return
    reached.write_text(str(os.getpid()))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.1)
