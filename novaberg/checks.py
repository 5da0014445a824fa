"""System checks that fail loudly where a setting and the schema disagree."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import Error, Warning, register
from pgvector.django import VectorField


@register()
def embedding_dimension(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """EMBEDDING_DIM is a setting, the vector columns are fixed by migrations: they must agree."""
    errors: list[Error] = []
    for model in apps.get_models():
        for field in model._meta.get_fields():
            if isinstance(field, VectorField) and field.dimensions != settings.EMBEDDING_DIM:
                errors.append(
                    Error(
                        f"{model._meta.label}.{field.name} has {field.dimensions} dimensions, "
                        f"NOVABERG_EMBEDDING_DIM is {settings.EMBEDDING_DIM}",
                        hint="Use an embedding model of the column's size, or migrate the column.",
                        id="novaberg.E001",
                    )
                )
    return errors


@register()
def secret_key_kept(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """Without DJANGO_SECRET_KEY and without the launcher's key file, each process signs with a
    key of its own: logins do not survive a restart and differ between processes."""
    if not getattr(settings, "SECRET_KEY_EPHEMERAL", False):
        return []
    return [
        Warning(
            "Kein fester Schlüssel: DJANGO_SECRET_KEY ist leer und "
            f"{settings.DATA_DIR / 'secret_key'} fehlt; dieser Prozess nutzt einen flüchtigen.",
            hint="`make run` legt die Datei an; in Produktion DJANGO_SECRET_KEY setzen.",
            id="novaberg.W001",
        )
    ]
