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

