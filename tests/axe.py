"""axe-core in the browser tests: the copy bundled in the ``axe-playwright-python`` package is
injected into the page the test drives, run over the whole document, and the test fails on any
violation of impact ``serious`` or ``critical`` (issue: accessibility of every page).

Usage in a Playwright test::

    from tests.axe import assert_accessible
    assert_accessible(page, "chat-desktop")

The report of every run is written to ``var/screenshots/axe-<name>.json`` beside the screenshots,
so a person can see what axe found, including the minor findings that do not fail the test.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent
REPORTS = BASE_DIR / "var" / "screenshots"
FAILING_IMPACTS = frozenset({"serious", "critical"})


def axe_source() -> str:
    """The bundled axe-core (axe.min.js); a missing package fails the test with the reason."""
    try:
        return resources.files("axe_playwright_python").joinpath("axe.min.js").read_text()
    except (ModuleNotFoundError, FileNotFoundError) as exc:  # pragma: no cover - install step
        pytest.fail(f"axe-core fehlt (axe-playwright-python nicht installiert): {exc}")


def run_axe(page: Any) -> dict[str, Any]:
    """Inject axe-core into ``page`` (once per document) and return its full result."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=axe_source())
    result: dict[str, Any] = page.evaluate(
        """async () => await window.axe.run(document, {
            resultTypes: ['violations'],
            runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa',
                                            'best-practice']},
        })"""
    )
    return result


def serious_violations(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in result.get("violations", []) if v.get("impact") in FAILING_IMPACTS]


def describe(violations: list[dict[str, Any]]) -> str:
    lines = []
    for v in violations:
        targets = [", ".join(node.get("target", [])) for node in v.get("nodes", [])[:5]]
        lines.append(f"{v['impact']}: {v['id']} – {v['help']} ({len(v['nodes'])}×: {targets})")
    return "\n".join(lines)


def assert_accessible(page: Any, name: str) -> dict[str, Any]:
    """Fail on serious or critical axe violations of the current page; returns the result."""
    result = run_axe(page)
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / f"axe-{name}.json").write_text(
        json.dumps(
            {"url": result.get("url"), "violations": result.get("violations", [])},
            ensure_ascii=False,
            indent=1,
        )
    )
    bad = serious_violations(result)
    assert not bad, f"axe-core auf {name}:\n{describe(bad)}"
    return result
