"""The web inspector in a real headless browser (Debian's chromium) against the local host.

One browser and one host (with API_TOKEN set) for the module; the tests run in file order as
one user's walk through the inspector: sign in with a per-user token, list, search, open a
metric (chart, history), edit a fact (the ledger shows it), delete, what changed, forget.
Each page is saved as a screenshot under test-artifacts/web/ (gitignored) for a human to look at.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import SHARED_TOKEN

from .hostproc import REPO, Host

pytestmark = pytest.mark.e2e

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
ARTIFACTS = REPO / "test-artifacts" / "web"
ADMIN = SHARED_TOKEN
USER = "web-ann"
#: Generous: the host shares 2 cores with other work; this is a ceiling, not a measurement.
WAIT_S = 60
#: Chromium on a machine with no internet: no background fetches, no sandbox (root in CI).
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
    "--force-prefers-reduced-motion",
)
DAY = timedelta(days=1)
NOW = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture(scope="module")
def web_host(token_host: Host) -> Host:
    """The session's shared host with auth on (tests/conftest.py)."""
    return token_host


def _browser(user_data: Path) -> WebDriver:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(
            f"browser tests need {', '.join(missing)}: run scripts/setup as root, or "
            "apt-get install chromium chromium-driver (or set CHROMIUM / CHROMEDRIVER)"
        )
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={user_data}")
    options.add_argument("--window-size=1280,1000")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    except WebDriverException as exc:
        pytest.fail(f"chromium did not start: {exc.msg}")
    driver.set_page_load_timeout(WAIT_S)
    return driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    driver = _browser(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()


def shot(driver: WebDriver, name: str, height: int | None = None) -> Path:
    """Save a screenshot; the window grows to the page's height so the whole page is in it."""
    width = driver.get_window_size()["width"]
    full = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, height or min(max(full + 140, 700), 4000))
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    assert console_errors(driver) == []
    return path


def console_errors(driver: WebDriver) -> list[str]:
    """Script errors and CSP violations since the last call (refused API calls are expected)."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and "Failed to load resource" not in entry["message"]
    ]


def wait(driver: WebDriver) -> WebDriverWait[WebDriver]:
    """A wait that retries when the page re-renders under it: an element read just as the
    script replaces it is stale, which says nothing about the page being wrong."""
    return WebDriverWait(driver, WAIT_S, ignored_exceptions=(StaleElementReferenceException,))


def wait_for(driver: WebDriver, by: str, value: str) -> WebElement:
    return wait(driver).until(ec.visibility_of_element_located((by, value)))


def wait_text(driver: WebDriver, css: str, text: str) -> None:
    wait(driver).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))


def expect_title(driver: WebDriver, text: str) -> None:
    """Wait for the page heading (a hash navigation renders after `get` returns)."""
    wait(driver).until(
        lambda d: [h.text for h in d.find_elements(By.CSS_SELECTOR, "main h1")] == [text],
        f"page heading never became {text!r}",
    )


def go(driver: WebDriver, host: Host, hash_: str) -> None:
    """Open a page of the inspector and wait until the script has rendered it."""
    driver.get(f"{host.base_url}/{hash_}")
    wait(driver).until(
        lambda d: d.execute_script(
            "return location.hash === arguments[0] && document.body.dataset.route === arguments[0]",
            hash_,
        ),
        f"{hash_!r} never rendered",
    )


def at(moment: datetime) -> dict[str, str]:
    return {"x-entity-memory-now": moment.isoformat().replace("+00:00", "Z")}


def seed(host: Host) -> dict[str, Any]:
    """A user with one entity of each type; the metric observed on three days."""
    admin = {"Authorization": f"Bearer {ADMIN}"}
    with httpx.Client(base_url=host.base_url, timeout=60, headers=admin) as c:

        def put(moment: datetime, session: str, *entities: dict[str, Any]) -> None:
            r = c.put(
                f"/v1/users/{USER}/entities",
                json={"session_id": session, "entities": list(entities)},
                headers=at(moment),
            )
            assert r.status_code == 200, r.text

        def cpa(value: float) -> dict[str, Any]:
            return {
                "type": "metric",
                "name": "Brand CPA",
                "content": f"Cost per acquisition of the brand campaign is {value} USD",
                "importance": 0.8,
                "metadata": {"kpi": "CPA", "value": value, "unit": "USD", "campaign": "Brand"},
            }

        put(NOW - 9 * DAY, "s-first", cpa(62))
        put(NOW - 6 * DAY, "s-second", cpa(55))
        put(
            NOW - 3 * DAY,
            "s-third",
            cpa(48),
            {
                "type": "campaign",
                "name": "Brand",
                "content": "Brand search campaign on target CPA",
                "importance": 0.9,
                "metadata": {"strategy": "target CPA", "budget": 150, "status": "enabled"},
            },
            {
                "type": "pain_point",
                "name": "Slow reporting",
                # Stored text that looks like markup must stay text in the page.
                "content": 'Reports arrive late <img src=x onerror="document.title=1">',
                "importance": 0.6,
                "metadata": {"severity": "high"},
            },
            {
                "type": "preference",
                "name": "Numbers first",
                "content": "Lead with the numbers",
                "importance": 0.7,
                "metadata": {"category": "communication", "value": "numbers first"},
            },
            {
                "type": "decision",
                "name": "Pause display",
                "content": "Paused the display campaign to fund search",
                "importance": 0.7,
                "metadata": {"action": "pause display", "rationale": "search converts better"},
            },
        )
        minted = c.post("/v1/admin/tokens", json={"user_id": USER, "label": "inspector"})
        assert minted.status_code == 201, minted.text
        return minted.json()


@pytest.fixture(scope="module")
def user_token(web_host: Host) -> str:
    return seed(web_host)["token"]


def api(host: Host, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=host.base_url, timeout=60, headers={"Authorization": f"Bearer {token}"}
    )


# --- the walk ----------------------------------------------------------------------------------


def test_a_wrong_token_is_refused_with_a_message(browser: WebDriver, web_host: Host) -> None:
    go(browser, web_host, "")
    expect_title(browser, "Sign in")
    browser.find_element(By.ID, "user").send_keys(USER)
    browser.find_element(By.ID, "token").send_keys("not-the-token")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_text(browser, "#status [role=alert]", "401")
    expect_title(browser, "Sign in")
    shot(browser, "01-sign-in-refused")


def test_sign_in_with_a_user_token_lists_entities_by_type(
    browser: WebDriver, web_host: Host, user_token: str
) -> None:
    go(browser, web_host, "#/signin")
    user = wait_for(browser, By.ID, "user")
    user.clear()
    user.send_keys(USER)
    browser.find_element(By.ID, "token").send_keys(user_token)
    shot(browser, "02-sign-in")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_text(browser, "main h1", "Entities")
    wait_text(browser, "#status", f"Signed in as {USER}")
    headings = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "main section h2")]
    assert headings == ["Campaigns", "Metrics", "Decisions", "Pain points", "Preferences"]
    assert browser.execute_script("return sessionStorage.getItem('em.token')") == user_token
    # Markup in stored text is shown as text, never parsed.
    assert browser.find_elements(By.CSS_SELECTOR, "main img") == []
    shot(browser, "03-entities")
    browser.find_element(By.CSS_SELECTOR, "a.tab[href*='type=metric']").click()
    wait_text(browser, "a.tab[aria-current=page]", "Metrics (1)")
    names = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "main table a")]
    assert names == ["Brand CPA"]


def test_search_ranks_with_the_context_route_and_shows_signals(
    browser: WebDriver, web_host: Host
) -> None:
    go(browser, web_host, "#/entities?type=all")
    box = wait_for(browser, By.ID, "q")
    box.send_keys("brand campaign budget")
    box.submit()
    wait_text(browser, "main section h2", "Results for")
    rows = browser.find_elements(By.CSS_SELECTOR, "main tbody tr")
    assert rows, "no results"
    first = rows[0].find_elements(By.TAG_NAME, "td")
    assert first[1].text.startswith("Brand")
    assert "brand" in first[-1].text  # matched terms
    head = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "main thead th")]
    assert {"Score", "Relevance", "Importance", "Recency", "Matched terms"} <= set(head)
    bars = [b.get_attribute("style") for b in browser.find_elements(By.CSS_SELECTOR, ".bar span")]
    assert bars[0] == "width: 100%;" and len(set(bars)) > 1, bars
    shot(browser, "04-search")


def test_a_metric_page_has_facts_a_trend_chart_and_history(
    browser: WebDriver, web_host: Host
) -> None:
    go(browser, web_host, "#/entity/metric/brand-cpa")
    expect_title(browser, "Brand CPA")
    wait_for(browser, By.CSS_SELECTOR, "svg.chart")
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart circle")) == 3
    label = browser.find_element(By.CSS_SELECTOR, "svg.chart title").get_attribute("textContent")
    assert "from 62" in label and "to 48" in label and "improving" in label
    versions = browser.find_elements(By.CSS_SELECTOR, "ol.history > li")
    assert len(versions) == 3
    assert "metadata.value" in versions[0].text and "55" in versions[0].text
    shot(browser, "05-metric")
    browser.set_window_size(390, 844)
    try:
        browser.refresh()  # the chart is drawn for the column's width at render time
        expect_title(browser, "Brand CPA")
        wait_for(browser, By.CSS_SELECTOR, "svg.chart")
        shot(browser, "06-metric-phone")
        wide = browser.execute_script(
            "const w = document.documentElement.clientWidth;"
            "return [...document.querySelectorAll('main *')]"
            ".filter((e) => e.getBoundingClientRect().right > w + 1)"
            ".map((e) => e.tagName + '.' + e.className).slice(0, 5)"
        )
        assert wide == [], f"wider than a phone's screen: {wide}"
    finally:
        browser.set_window_size(1280, 1000)


def test_editing_a_fact_writes_a_version_the_history_shows(
    browser: WebDriver, web_host: Host, user_token: str
) -> None:
    go(browser, web_host, "#/entity/campaign/brand")
    expect_title(browser, "Brand")
    browser.find_element(By.CSS_SELECTOR, "button[aria-label='Edit Budget']").click()
    field = wait_for(browser, By.ID, "edit-metadata-budget")
    assert browser.switch_to.active_element == field
    field.send_keys(Keys.ESCAPE)  # cancel with the keyboard, then edit again
    edit = wait_for(browser, By.CSS_SELECTOR, "button[aria-label='Edit Budget']")
    assert browser.switch_to.active_element == edit
    edit.send_keys(Keys.ENTER)
    field = wait_for(browser, By.ID, "edit-metadata-budget")
    assert not edit.is_displayed()
    field.clear()
    field.send_keys("300")
    shot(browser, "07-edit-fact")
    field.submit()
    wait_text(browser, "#status", "Saved Budget")
    wait_text(browser, "ol.history > li:first-child", "metadata.budget")
    newest = browser.find_element(By.CSS_SELECTOR, "ol.history > li:first-child")
    assert newest.find_element(By.TAG_NAME, "del").text == "150"
    assert newest.find_element(By.TAG_NAME, "ins").text == "300"
    assert "v2" in newest.text
    shot(browser, "08-after-edit")
    with api(web_host, user_token) as c:
        history = c.get(f"/v1/users/{USER}/entities/campaign/brand/history").json()
    assert history["versions"][0]["changes"]["metadata.budget"] == {"old": 150.0, "new": 300.0}
    # Its sentence says nothing of the budget, so it stays.
    assert history["versions"][0]["entity"]["content"] == "Brand search campaign on target CPA"


def test_deleting_an_entity_asks_first_and_removes_it(
    browser: WebDriver, web_host: Host, user_token: str
) -> None:
    go(browser, web_host, "#/entity/pain_point/slow-reporting")
    expect_title(browser, "Slow reporting")
    assert browser.find_elements(By.CSS_SELECTOR, "main img") == []
    browser.find_element(By.XPATH, "//button[text()='Delete this entity']").click()
    confirm = wait_for(browser, By.XPATH, "//button[starts-with(text(), 'Yes, delete')]")
    assert browser.switch_to.active_element == confirm
    shot(browser, "09-delete-confirm")
    confirm.click()
    wait_text(browser, "#status", "Deleted Slow reporting")
    wait_text(browser, "main h1", "Entities")
    assert "Slow reporting" not in browser.find_element(By.TAG_NAME, "main").text
    with api(web_host, user_token) as c:
        r = c.get(f"/v1/users/{USER}/entities/pain_point/slow-reporting")
    assert r.status_code == 404


def test_what_changed_since_shows_the_edit_and_the_deletion(
    browser: WebDriver, web_host: Host
) -> None:
    since = (NOW - DAY).date().isoformat()
    go(browser, web_host, f"#/changes?since={since}")
    wait_text(browser, "main h1", f"since {since}")
    items = {
        li.find_element(By.TAG_NAME, "h2").text: li
        for li in browser.find_elements(By.CSS_SELECTOR, "ul.changes > li")
    }
    shot(browser, "10-changes")
    assert any(n.startswith("Slow reporting") for n in items), list(items)
    deleted = next(li for name, li in items.items() if name.startswith("Slow reporting"))
    assert "deleted" in deleted.find_element(By.CSS_SELECTOR, "h2 .badge.status-deleted").text
    assert deleted.find_elements(By.CSS_SELECTOR, "h2 a") == []  # not linked as live
    edited = next(li for name, li in items.items() if name.startswith("Brand"))
    assert "metadata.budget" in edited.text
    assert not any(name.startswith("Brand CPA") for name in items)  # written days before
    shot(browser, "10-changes")


def test_forgetting_the_user_needs_the_typed_user_id(
    browser: WebDriver, web_host: Host, user_token: str
) -> None:
    go(browser, web_host, "#/forget")
    wait_text(browser, "main h1", "Forget user")
    button = browser.find_element(By.CSS_SELECTOR, "form button.danger")
    box = browser.find_element(By.ID, "confirm")
    box.send_keys(USER[:-1])
    assert not button.is_enabled()
    box.send_keys(USER[-1])
    assert button.is_enabled()
    shot(browser, "11-forget-confirm")
    button.click()
    wait_text(browser, "#status", f"Forgot user {USER}")
    erased = browser.find_element(By.CSS_SELECTOR, "form .notice").text
    assert "erased: 0 KV keys" not in erased, erased
    shot(browser, "12-forgotten")
    with api(web_host, user_token) as c:  # forgetting deletes the user's own tokens too
        assert c.get(f"/v1/users/{USER}/entities").status_code == 401
    with api(web_host, ADMIN) as c:
        assert c.get(f"/v1/users/{USER}/entities").json()["count"] == 0


def test_without_api_token_the_page_works_with_no_token(browser: WebDriver, host: Host) -> None:
    with httpx.Client(base_url=host.base_url, timeout=60) as c:
        r = c.put(
            "/v1/users/web-open/entities",
            json={
                "session_id": "s1",
                "entities": [{"type": "campaign", "name": "Open Alpha", "importance": 0.5}],
            },
        )
        assert r.status_code == 200, r.text
    browser.get(f"{host.base_url}/#/signin")
    browser.execute_script("sessionStorage.clear()")
    browser.refresh()
    wait_for(browser, By.ID, "user").send_keys("web-open")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_text(browser, "main", "Open Alpha")
    shot(browser, "13-open-mode")


def test_without_api_token_an_empty_sign_in_lists_the_users(browser: WebDriver, host: Host) -> None:
    """No user id and no token on a service without API_TOKEN: there is no admin to be, so
    the page says the service is open and shows the user list (not the form again)."""
    browser.get(f"{host.base_url}/#/signin")
    browser.execute_script("sessionStorage.clear()")
    browser.refresh()
    wait_for(browser, By.ID, "user")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    expect_title(browser, "Users")
    status = browser.find_element(By.ID, "status").text
    assert "API_TOKEN" in status and "Signed in as the admin" not in status
    assert browser.find_elements(By.ID, "user") == []  # not the sign-in form
    wait_text(browser, "main", "web-open")  # the user the test above wrote
    shot(browser, "13b-open-mode-users")


def test_provenance_excerpts_are_shown_as_text(browser: WebDriver, host: Host) -> None:
    """A stored entity's provenance (its source words, session, time, who read it), with markup
    in the excerpt that must stay text."""
    with httpx.Client(base_url=host.base_url, timeout=60) as c:
        r = c.put(
            "/v1/users/prov/entities",
            json={
                "session_id": "s-prov",
                "entities": [
                    {
                        "type": "campaign",
                        "name": "Prov Alpha",
                        "content": "moving to target CPA",
                        "importance": 0.7,
                        "source": "user: move <b>Prov Alpha</b> to target CPA",
                    }
                ],
            },
        )
        assert r.status_code == 200, r.text
    browser.get(f"{host.base_url}/#/entities")
    browser.execute_script(
        "sessionStorage.setItem('em.user', 'prov');location.hash = '#/entity/campaign/prov-alpha';"
    )
    browser.refresh()
    expect_title(browser, "Prov Alpha")
    quote = wait_for(browser, By.CSS_SELECTOR, "ol.provenance blockquote")
    assert quote.text == "user: move <b>Prov Alpha</b> to target CPA"
    assert browser.find_elements(By.CSS_SELECTOR, "ol.provenance b") == []
    meta = browser.find_element(By.CSS_SELECTOR, "ol.provenance .help").text
    assert "s-prov" in meta
    shot(browser, "14-provenance")
