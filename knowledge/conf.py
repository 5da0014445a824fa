"""Knowledge settings, read at call time: a Django setting of the same name wins (tests use
``settings.KNOWLEDGE_…``), else the environment variable, else the default. Bad values fail
loudly with the variable's name (the ``novaberg.settings`` habit).

Kept in the app so the knowledge zone owns its numbers; ``settings.KNOWLEDGE_DIR`` (the zone
itself, ``NOVABERG_KNOWLEDGE_DIR``) stays in ``novaberg/settings.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def _raw(name: str) -> str | None:
    value = getattr(settings, name, None)
    if value is not None:
        return str(value)
    env = os.environ.get(f"NOVABERG_{name}", "").strip()
    return env or None


def _float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"NOVABERG_{name} must be a number, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"NOVABERG_{name} must be >= {minimum}, got {value}")
    return value


def _int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"NOVABERG_{name} must be an integer, got {raw!r}") from exc
    if value < minimum:
        raise ImproperlyConfigured(f"NOVABERG_{name} must be >= {minimum}, got {value}")
    return value


def knowledge_dir() -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(settings.KNOWLEDGE_DIR))))


# --- reinforcement (seed 002 §2: "Verfall — vier Spalten, mit Halbwertszeit") ---------------


def half_life_days() -> float:
    """Half-life of a library row's weight. A start value, not a measurement: knowledge she
    worked out should outlive short-term memory (7-30 days) by a wide margin."""
    return _float("KNOWLEDGE_HALF_LIFE_DAYS", 90.0, minimum=0.01)


def reinforce_boost() -> float:
    return _float("KNOWLEDGE_REINFORCE_BOOST", 1.0, minimum=0.0)


# --- the write layer ----------------------------------------------------------------------


def lock_timeout_s() -> float:
    return _float("KNOWLEDGE_LOCK_TIMEOUT_S", 10.0, minimum=0.0)


def max_file_bytes() -> int:
    return _int("KNOWLEDGE_MAX_FILE_BYTES", 1024 * 1024, minimum=1024)


def read_max_lines() -> int:
    return _int("KNOWLEDGE_READ_MAX_LINES", 200, minimum=1)


def grep_max_lines() -> int:
    return _int("KNOWLEDGE_GREP_MAX_LINES", 50, minimum=1)


def max_text_chars() -> int:
    """Longest text one edit may bring in."""
    return _int("KNOWLEDGE_MAX_TEXT_CHARS", 8000, minimum=100)


def test_hook() -> str:
    """Tests only: ``knowledge.tests.<module>:<function>`` called at named points of a write,
    so a test can kill a real worker between two steps. Empty in production."""
    return _raw("KNOWLEDGE_TEST_HOOK") or ""


# --- the return path ------------------------------------------------------------------------


def candidates_k() -> int:
    """Library rows handed to the planner (the seed's measured runs used 8)."""
    return _int("KNOWLEDGE_CANDIDATES", 8, minimum=1)


def planner_cosine_floor() -> float:
    """Offline planner: a candidate below this cosine is never assigned, whatever words it
    shares. Measured with all-MiniLM-L6-v2 (384) on 11 German memories x 5 German knowledge
    files (knowledge/tests/corpus.py plus one): a memory and the file on its subject reached
    0.25-0.70, unrelated pairs 0.04-0.44 — on this English model and German text the cosine
    does not separate (seed 004 v0.10: assignment is not a similarity question). The floor
    therefore sits below every related pair measured and only removes candidates that are
    clearly elsewhere; the term rule decides. Another model needs its own measurement (seed
    004 v0.7: a threshold belongs to a space and a corpus)."""
    return _float("KNOWLEDGE_PLANNER_COSINE_FLOOR", 0.20)


def planner_min_terms() -> int:
    """Offline planner: distinct content stems a memory must share with a file's topic,
    headings, keywords or summary (at least one of them in topic/headings/keywords)."""
    return _int("KNOWLEDGE_PLANNER_MIN_TERMS", 2, minimum=1)


def planner_max_tokens() -> int:
    return _int("KNOWLEDGE_PLANNER_MAX_TOKENS", 300, minimum=50)


def new_file_min_shared_terms() -> int:
    """New-file rule: an unassigned memory starts a file only together with an earlier
    unassigned memory of the same pair that shares at least this many content stems."""
    return _int("KNOWLEDGE_NEW_FILE_MIN_SHARED_TERMS", 3, minimum=1)


def new_file_min_terms() -> int:
    """New-file rule: a memory "stands on its own" with at least this many content stems."""
    return _int("KNOWLEDGE_NEW_FILE_MIN_TERMS", 4, minimum=1)


def rueckweg_every_s() -> float:
    return _float("KNOWLEDGE_RUECKWEG_EVERY_S", 600.0, minimum=10.0)


def rueckweg_max_attempts() -> int:
    """A memory whose runs ended in ``fehler`` this often is no longer picked up by beat."""
    return _int("KNOWLEDGE_RUECKWEG_MAX_ATTEMPTS", 3, minimum=1)


def dense_floor() -> float:
    """Library search (the later per-turn context source): absolute cosine floor. A fallback
    taken from the file index's measurement on the same model until the library is
    calibrated on its own rows."""
    return _float("KNOWLEDGE_DENSE_FLOOR", float(settings.FILES_DENSE_FLOOR_FALLBACK))


# --- the per-turn context source ([EIGENES WISSEN]) -----------------------------------------


def context_k() -> int:
    """At most this many knowledge files per turn (the file index's K)."""
    return _int("KNOWLEDGE_CONTEXT_K", int(settings.FILES_RETRIEVAL_K), minimum=1)


def context_floor() -> float:
    """The per-turn floor: ``KNOWLEDGE_DENSE_FLOOR`` when set; else the file index's floor
    calibrated for the active embedding model (``files.search.active_floor``: one space, one
    calibration — the library rows are embedded with the same model and the same kind of
    text, topic + summary + keywords); else the documented fallback."""
    if _raw("KNOWLEDGE_DENSE_FLOOR") is not None:
        return dense_floor()
    from files.search import active_floor

    return float(active_floor().value)


def excerpt_chars() -> int:
    """Longest excerpt of a knowledge file shown in [EIGENES WISSEN]."""
    return _int("KNOWLEDGE_EXCERPT_CHARS", 600, minimum=50)


def learn_max_sentences() -> int:
    """Offline distillate of a released file: at most this many sentences."""
    return _int("KNOWLEDGE_LEARN_MAX_SENTENCES", 6, minimum=1)


def zone_scan_every_s() -> float:
    """How often beat looks for files changed or removed by hand in the zone."""
    return _float("KNOWLEDGE_ZONE_SCAN_EVERY_S", 300.0, minimum=10.0)
