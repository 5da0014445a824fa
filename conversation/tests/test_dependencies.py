"""Dependencies run one way: directives, files and knowledge plug into conversation, never back
(DESIGN.md "Dependencies between apps"). Every module of conversation/ and novaberg/ (but the
URL and ASGI wiring) is parsed, and every import in it — at module level, inside a function,
under TYPE_CHECKING, or by name through importlib — is checked. Ruff's TID251 (the ruff.toml
files in both folders) says the same at lint time; this test holds it without ruff."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUG_INS = ("directives", "files", "knowledge")
# Wiring may name every app: the URL tree and the ASGI application.
WIRING = {Path("novaberg/urls.py"), Path("novaberg/asgi.py")}


def imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) for every import in ``source``: statements at any depth, and calls of
    ``import_module("…")`` / ``__import__("…")`` with a literal name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if (
                name in {"import_module", "__import__"}
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                found.append((node.lineno, first.value))
    return found


def plug_in_imports(source: str) -> list[str]:
    return [
        f"{line}: {module}"
        for line, module in imported_modules(source)
        if module.split(".")[0] in PLUG_INS
    ]


def core_modules() -> list[Path]:
    paths = sorted(
        path.relative_to(ROOT)
        for folder in ("conversation", "novaberg")
        for path in (ROOT / folder).rglob("*.py")
    )
    return [path for path in paths if path not in WIRING]


def test_the_walk_covers_the_core() -> None:
    modules = {str(path) for path in core_modules()}
    # The pipeline nodes that once imported files and directives are among the walked modules.
    for node in ("composer", "enricher", "responder", "tribunal"):
        assert f"conversation/pipeline/{node}.py" in modules
    assert "conversation/tests/browser_asgi.py" in modules
    assert len(modules) > 40


@pytest.mark.parametrize("path", core_modules(), ids=str)
def test_core_module_imports_no_plug_in(path: Path) -> None:
    offending = plug_in_imports((ROOT / path).read_text(encoding="utf-8"))
    assert not offending, f"{path} imports a plug-in app: {offending}"


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("from files import retrieval", id="from-import"),
        pytest.param("import directives.blocks", id="import"),
        pytest.param("from knowledge.library import search", id="knowledge"),
        pytest.param("def f():\n    from files.blocks import records_block\n", id="in-function"),
        pytest.param(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from files import models\n",
            id="type-checking",
        ),
        pytest.param(
            "from importlib import import_module\nimport_module('files.retrieval')\n",
            id="import_module",
        ),
        pytest.param("__import__('directives.tribunal')", id="dunder-import"),
    ],
)
def test_an_added_plug_in_import_is_found(source: str) -> None:
    assert plug_in_imports(source)


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("from conversation import context", id="core"),
        pytest.param("import filecmp", id="prefix-only"),
        pytest.param("from .files import x", id="relative"),
        pytest.param("include('files.api_urls')", id="url-include-string"),
    ],
)
def test_other_imports_pass(source: str) -> None:
    assert plug_in_imports(source) == []
