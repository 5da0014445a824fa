"""The accessibility check itself: axe-core finds a serious violation on a page that has one and
passes a page without, so a browser test that calls ``assert_accessible`` can fail."""

from __future__ import annotations

import pytest

from tests.axe import assert_accessible, run_axe, serious_violations
from tests.chromium import CHROMIUM_ARGS

pytestmark = [pytest.mark.browser]

BROKEN = """<!doctype html><html><head><title>x</title></head><body><main>
<h1>Test</h1><button></button><input type="text"><img src="data:,">
<p style="color:#bbb;background:#fff">kaum lesbar</p></main></body></html>"""

FINE = """<!doctype html><html lang="de"><head><title>Gut</title></head><body><main>
<h1>Test</h1><button type="button">Senden</button>
<label for="t">Nachricht</label><input id="t" type="text">
<p style="color:#222;background:#fff">gut lesbar</p></main></body></html>"""


def test_axe_fails_a_page_with_serious_violations_and_passes_a_clean_one(chromium: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_content(BROKEN)
            found = {v["id"] for v in serious_violations(run_axe(page))}
            # a button without a name, an unlabeled input, an image without alt, low contrast
            assert {"button-name", "label", "image-alt", "color-contrast"} <= found
            with pytest.raises(AssertionError, match="button-name"):
                assert_accessible(page, "selbsttest-kaputt")

            page.set_content(FINE)
            assert_accessible(page, "selbsttest-gut")
        finally:
            browser.close()
