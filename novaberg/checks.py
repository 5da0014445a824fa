"""System checks that fail loudly where a setting and the schema disagree."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import Error, register
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
