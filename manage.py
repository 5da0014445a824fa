#!/usr/bin/env python
"""Django's command-line utility for Novaberg.

Commands connect to the running services (DATABASE_URL / REDIS_URL, or the embedded servers of
the data folder, found by their PID files); they never start one. When a service is not there,
the command ends with one German line that says how to start it, not with a traceback.
"""

from __future__ import annotations

import os
import sys

START_HINT = (
    "Starten: `make run` in einem zweiten Terminal (Ctrl-C beendet alles), oder "
    "`python -m novaberg.launcher services` (beenden: `make stop`)"
)


def _service_of(exc: BaseException) -> tuple[str, BaseException] | None:
    """Which service a failure is about ("postgres" | "redis"), or None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        module = type(current).__module__
        name = type(current).__name__
        if name in {"OperationalError", "InterfaceError"} and module.startswith(
            ("django.db", "psycopg")
        ):
            return "postgres", current
        if name in {"ConnectionError", "TimeoutError"} and module.startswith("redis"):
            return "redis", current
        if name == "OperationalError" and module.startswith("kombu"):
            return "redis", current
        current = current.__cause__ or current.__context__
    return None


def explain(exc: BaseException) -> str | None:
    found = _service_of(exc)
    if found is None:
        return None
    service, cause = found
    from django.conf import settings

    detail = (str(cause).strip().splitlines() or [type(cause).__name__])[0][:200]
    missing = getattr(settings, "EMBEDDED_NOT_RUNNING", [])
    if service == "postgres":
        if "postgres" in missing:
            return (
                f"PostgreSQL (eingebettet, {settings.DATA_DIR / 'pg'}) läuft nicht. {START_HINT}; "
                "oder DATABASE_URL setzen."
            )
        return (
            f"Datenbank nicht erreichbar ({detail}). Fix: DATABASE_URL prüfen, oder {START_HINT}."
        )
    if "redis" in missing:
        return (
            f"Redis (eingebettet, {settings.DATA_DIR / 'redis'}) läuft nicht. {START_HINT}; "
            "oder REDIS_URL setzen."
        )
    return f"Redis nicht erreichbar ({detail}). Fix: REDIS_URL prüfen, oder {START_HINT}."


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novaberg.settings")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except Exception as exc:
        message = explain(exc)
        if message is None:
            raise
        print(f"novaberg: FEHLER: {message}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
