from __future__ import annotations

from django.http import HttpRequest

from novaberg import llm


def backend(request: HttpRequest) -> dict[str, object]:
    """The active LLM backend, shown on every page ("Offline-Modus" when none is configured)."""
    return {"llm_label": llm.backend_label(), "llm_offline": llm.get_gateway().name == "offline"}
