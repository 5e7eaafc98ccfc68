"""Debian's Chromium, headless, driven by Playwright for Python (``pip install playwright``; its own browser
download is not needed): what the console's tests and benchmark open the page with.

    with headless_chromium() as browser:
        page = browser.new_page(); page.goto("http://127.0.0.1:8000/?kg=demo&q=who+directed+Carnival+Lights%3F")
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "headless_chromium"]

CHROMIUM = Path("/usr/bin/chromium")
#: headless on a closed network, as root: no sandbox, and none of Chromium's background calls home (Playwright
#: gives each launch a fresh profile of its own)
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage")


@contextmanager
def headless_chromium(executable: Path = CHROMIUM) -> Iterator[Any]:
    """A launched Playwright ``Browser`` (closed on exit); ``FileNotFoundError`` when Chromium is missing."""
    if not executable.exists():
        raise FileNotFoundError(f"{executable} is missing: install Debian's chromium (make install does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(executable), headless=True, args=list(CHROMIUM_ARGS))
        try:
            yield browser
        finally:
            browser.close()
