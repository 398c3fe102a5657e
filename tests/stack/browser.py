"""Headless Chromium driven by Selenium, signed in to the stack's Prefect and MLflow UIs as a reviewer would be.

Debian's `chromium` and `chromium-driver` (PITFALLS.md); Selenium is told where both are, so its manager never
looks for a browser on the internet. Used by the browser test (tests/stack/test_browser.py) and the screenshots
of docs/operations.md (bench/screenshots.py).
"""

from __future__ import annotations

import base64
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WINDOW = (1600, 1200)
# A table cell that ends so has been cut: what it hides is not on the page.
CUT = ("…", "...")
# MLflow 3.17 opens an assistant panel over a third of the page; its header's close button.
CLOSE_ASSISTANT = "document.querySelectorAll('button[aria-label=\"Close\"]').forEach(button => button.click());"
# The registered model's description (the card) is long: scrolled past, to the versions table with its aliases.
TO_VERSIONS = ("const heading = Array.from(document.querySelectorAll('h1, h2, h3, h4, span, button')).filter(e => "
               "e.innerText && /^Versions/.test(e.innerText.trim())).pop(); if (heading) heading.scrollIntoView();")


def chromium() -> tuple[str, str] | None:
    """The paths of a Chromium and its chromedriver, when both are installed."""
    browser = next(filter(None, map(shutil.which, BROWSERS)), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@contextmanager
def headless(width: int = WINDOW[0], height: int = WINDOW[1]) -> Iterator:
    """A headless Chromium (Selenium's webdriver.Chrome), quit on the way out."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    found = chromium()
    if found is None:
        raise RuntimeError("no chromium and chromedriver found (Debian: apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    # --no-sandbox: Chromium's sandbox refuses to run as root (CI containers do).
    for argument in ("--headless=new", f"--window-size={width},{height}", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--hide-scrollbars"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=found[1]))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def sign_in_to_mlflow(driver, user: str, password: str) -> None:
    """Send MLflow's basic-auth credentials with every request (the UI itself has no login page)."""
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Basic {token}"}})


def sign_in_to_prefect(driver, ui: str, auth_string: str) -> None:
    """What the Prefect UI's login page stores once a password is typed in (its API client sends it from there)."""
    driver.get(ui)
    token = base64.b64encode(auth_string.encode()).decode()
    driver.execute_script("localStorage.setItem('prefect-password', arguments[0]);", token)


def wait_for_text(driver, *texts: str, seconds: float = 60) -> str:
    """The page's visible text once it holds every one of `texts` (the UIs render after the page loads)."""
    deadline = time.monotonic() + seconds
    seen = ""
    while time.monotonic() < deadline:
        seen = page_text(driver)
        if all(text in seen for text in texts):
            return seen
        time.sleep(0.5)
    missing = [text for text in texts if text not in seen]
    raise AssertionError(f"{driver.current_url} never showed {missing} in {seconds:.0f} s; it shows: {seen[:1500]}")


def page_text(driver) -> str:
    """The visible text of the page, whitespace as rendered."""
    return driver.execute_script("return document.body ? document.body.innerText : '';") or ""


def table_cells(driver) -> list[str]:
    """The visible text of every table cell on the page."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('td, th')).map(cell => cell.innerText.trim());")


def wait_for_cells(driver, seconds: float = 60) -> list[str]:
    """The visible text of every table cell once the page shows any (a heading renders before the Markdown below
    it); empty if none shows in `seconds`."""
    deadline = time.monotonic() + seconds
    while not (cells := table_cells(driver)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return cells



# Cells whose text passes their own edge (a cell that neither wraps nor widens) or the edge of the page or of a box
# that clips it (a table wider than its container): what passes is not on the screen.
OVERFLOWING_CELLS = """
const width = document.documentElement.clientWidth;
function clipped(element) {
  const box = element.getBoundingClientRect();
  if (box.right > width + 1) return true;
  for (let up = element.parentElement; up; up = up.parentElement) {
    if (getComputedStyle(up).overflowX === 'visible') continue;
    if (box.right > up.getBoundingClientRect().right + 1) return true;
  }
  return false;
}
return Array.from(document.querySelectorAll('td, th'))
  .filter(cell => cell.getClientRects().length && (cell.scrollWidth > cell.clientWidth + 1 || clipped(cell)))
  .map(cell => cell.innerText.trim().slice(0, 80));
"""
# Whether a text is on the screen as the page opens, above the fold: some occurrence of it lies wholly inside the
# window and inside every box that clips it (an ellipsis-cut name hides what passes its box).
SHOWN_ABOVE_THE_FOLD = """
const text = arguments[0], width = document.documentElement.clientWidth, height = window.innerHeight;
const pen = document.createElement('canvas').getContext('2d');
function visibleRight(box, style) {  // an overflowing box that ends in an ellipsis shows its text up to the ellipsis
  pen.font = style.font;
  return box.right - (style.textOverflow === 'ellipsis' ? pen.measureText('…').width : 0);
}
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const node = walker.currentNode;
  for (let at = node.data.indexOf(text); at >= 0; at = node.data.indexOf(text, at + 1)) {
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + text.length);
    const box = range.getBoundingClientRect();
    let shown = box.width > 0 && box.left >= -1 && box.top >= -1 && box.right <= width + 1 && box.bottom <= height + 1;
    for (let up = node.parentElement; shown && up; up = up.parentElement) {
      const style = getComputedStyle(up);
      if (style.visibility === 'hidden' || style.display === 'none') shown = false;
      if (style.overflowX === 'visible' && style.overflowY === 'visible') continue;
      const frame = up.getBoundingClientRect();
      const right = up.scrollWidth > up.clientWidth + 1 ? visibleRight(frame, style) : frame.right;
      if (box.left < frame.left - 1 || box.right > right + 1 || box.top < frame.top - 1
          || box.bottom > frame.bottom + 1) shown = false;
    }
    if (shown) return true;
  }
}
return false;
"""


def overflowing_cells(driver) -> list[str]:
    """The text of every table cell some of whose text is off the screen (OVERFLOWING_CELLS)."""
    return driver.execute_script(OVERFLOWING_CELLS)


def shown_above_the_fold(driver, text: str) -> bool:
    """Whether `text` is on the screen without scrolling, uncut (SHOWN_ABOVE_THE_FOLD)."""
    return driver.execute_script(SHOWN_ABOVE_THE_FOLD, text)


def wait_until_shown(driver, *texts: str, seconds: float = 60) -> None:
    """Wait until every one of `texts` is shown above the fold (the UIs render after the page loads)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        missing = [text for text in texts if not shown_above_the_fold(driver, text)]
        if not missing:
            return
        time.sleep(0.5)
    raise AssertionError(f"{driver.current_url} never showed {missing} above the fold in {seconds:.0f} s; it shows: "
                         f"{page_text(driver)[:1500]}")
