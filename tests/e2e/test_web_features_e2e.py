"""The inspector's management pages in headless chromium against the local host: the admin's
user list, adding an entity, merging two that are one thing, the context preview, the export
download, a session's extracted and rejected candidates, the trend sentence of a KPI where
higher is better, and every page at 390 px without sideways scrolling.

Screenshots go to test-artifacts/web-features/ (gitignored)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from tests.conftest import SHARED_TOKEN

from .hostproc import REPO, Host
from .test_web_e2e import (
    DAY,
    NOW,
    _browser,
    at,
    console_errors,
    expect_title,
    go,
    wait,
    wait_for,
    wait_text,
)

pytestmark = pytest.mark.e2e

ARTIFACTS = REPO / "test-artifacts" / "web-features"
USER = "web-features"
ADMIN = {"Authorization": f"Bearer {SHARED_TOKEN}"}


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    (ARTIFACTS / "downloads").mkdir(parents=True)
    driver = _browser(tmp_path_factory.mktemp("chromium-features"))
    driver.execute_cdp_cmd(
        "Page.setDownloadBehavior",
        {"behavior": "allow", "downloadPath": str(ARTIFACTS / "downloads")},
    )
    yield driver
    driver.quit()


def shot(driver: WebDriver, name: str) -> None:
    width = driver.get_window_size()["width"]
    full = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(max(full + 140, 700), 4000))
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))
    assert console_errors(driver) == []


def put(host: Host, session: str, *entities: dict[str, Any], when: Any = None) -> None:
    with httpx.Client(base_url=host.base_url, timeout=60, headers=ADMIN) as c:
        r = c.put(
            f"/v1/users/{USER}/entities",
            json={"session_id": session, "entities": list(entities)},
            headers=at(when) if when else {},
        )
        assert r.status_code == 200, r.text


def ctr(value: float) -> dict[str, Any]:
    return {
        "type": "metric",
        "name": "Search CTR",
        "content": f"Click-through rate of search is {value}%",
        "metadata": {"kpi": "CTR", "value": value, "unit": "%"},
    }


@pytest.fixture(scope="module")
def seeded(token_host: Host) -> Host:
    for days, value in ((9, 9.2), (6, 10.4), (3, 8.7)):
        put(token_host, f"s-ctr-{days}", ctr(value), when=NOW - days * DAY)
    put(
        token_host,
        "s-costs",
        {
            "type": "metric",
            "name": "Cost per booking",
            "content": "Cost per booking is 31 USD",
            "metadata": {"kpi": "cost per booking", "value": 31, "unit": "USD"},
        },
        {
            "type": "metric",
            "name": "Booking CPA",
            "content": "CPA of bookings is 33 USD",
            "aliases": ["CPA"],
            "metadata": {"kpi": "CPA", "value": 33, "unit": "USD"},
        },
        {
            "type": "campaign",
            "name": "Summer search",
            "content": "Summer search campaign",
            "metadata": {"status": "enabled", "budget": 80},
        },
    )
    messages = [
        {"role": "user", "content": "Summer search runs on a $80 daily budget, keep it enabled."}
    ]
    with httpx.Client(base_url=token_host.base_url, timeout=120, headers=ADMIN) as c:
        r = c.post(
            f"/v1/users/{USER}/sessions/s-talk/extract?wait=true", json={"messages": messages}
        )
        assert r.status_code == 200, r.text
    return token_host


@pytest.fixture(scope="module")
def signed_in(browser: WebDriver, seeded: Host) -> Host:
    """Signed in as the admin with no user: the user list, then a user."""
    go(browser, seeded, "#/signin")
    browser.execute_script("sessionStorage.clear()")
    browser.refresh()
    wait_for(browser, By.ID, "user").clear()
    browser.find_element(By.ID, "token").send_keys(SHARED_TOKEN)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    expect_title(browser, "Users")
    return seeded


def test_the_admin_sees_the_user_list_and_opens_a_user(browser: WebDriver, signed_in: Host) -> None:
    users = [b.text for b in browser.find_elements(By.CSS_SELECTOR, "main tbody button")]
    assert USER in users
    shot(browser, "01-users")
    button = browser.find_element(By.XPATH, f"//main//tbody//button[text()='{USER}']")
    button.click()
    expect_title(browser, "Entities")
    wait_text(browser, "#status", f"Now inspecting {USER}")


def test_lists_show_values_and_no_type_column_in_grouped_tables(
    browser: WebDriver, signed_in: Host
) -> None:
    go(browser, signed_in, "#/entities?type=all")
    expect_title(browser, "Entities")
    for table in browser.find_elements(By.CSS_SELECTOR, "main section table"):
        head = [th.get_attribute("textContent") for th in table.find_elements(By.TAG_NAME, "th")]
        assert "Type" not in head and "Value" in head, head
    row = browser.find_element(By.XPATH, "//main//tr[td/a[text()='Summer search']]")
    assert "enabled" in row.text and "budget 80" in row.text
    shot(browser, "02-entities-with-values")


def test_the_trend_sentence_says_higher_is_better_for_ctr(
    browser: WebDriver, signed_in: Host
) -> None:
    go(browser, signed_in, "#/entity/metric/search-ctr")
    expect_title(browser, "Search CTR")
    sentence = wait_for(browser, By.CSS_SELECTOR, "p.trend").text
    assert "(worsening)" in sentence and "Higher is better for CTR" in sentence, sentence
    shot(browser, "03-ctr-trend")


def test_adding_an_entity(browser: WebDriver, signed_in: Host) -> None:
    go(browser, signed_in, "#/add?type=preference")
    expect_title(browser, "Add an entity")
    wait_for(browser, By.ID, "add-name").send_keys("Weekly summary")
    browser.find_element(By.ID, "add-content").send_keys("Wants a weekly summary on Mondays")
    meta = browser.find_element(By.ID, "add-metadata")
    meta.clear()
    meta.send_keys('{"category": "reporting", "value": "weekly on Mondays"}')
    shot(browser, "04-add")
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    expect_title(browser, "Weekly summary")
    wait_text(browser, "#status", "Added Weekly summary")
    with httpx.Client(base_url=signed_in.base_url, timeout=60, headers=ADMIN) as c:
        got = c.get(f"/v1/users/{USER}/entities/preference/weekly-summary")
    assert got.status_code == 200 and got.json()["metadata"]["value"] == "weekly on Mondays"


def test_merging_keeps_both_histories_and_joins_the_aliases(
    browser: WebDriver, signed_in: Host
) -> None:
    go(browser, signed_in, "#/entity/metric/cost-per-booking")
    expect_title(browser, "Cost per booking")
    Select(wait_for(browser, By.ID, "merge-other")).select_by_visible_text("Booking CPA")
    browser.find_element(By.XPATH, "//button[text()='Merge into this']").click()
    wait_text(browser, "#status", "Merged Booking CPA into Cost per booking")
    merged = wait_for(browser, By.CSS_SELECTOR, "section.merged")
    assert "booking-cpa" in merged.find_element(By.TAG_NAME, "h2").text
    assert merged.find_elements(By.CSS_SELECTOR, "ol.history > li")
    shot(browser, "05-merged")
    with httpx.Client(base_url=signed_in.base_url, timeout=60, headers=ADMIN) as c:
        kept = c.get(f"/v1/users/{USER}/entities/metric/cost-per-booking").json()
        gone = c.get(f"/v1/users/{USER}/entities/metric/booking-cpa")
        theirs = c.get(f"/v1/users/{USER}/entities/metric/booking-cpa/history").json()
        ours = c.get(f"/v1/users/{USER}/entities/metric/cost-per-booking/history").json()
    assert {"Booking CPA", "CPA"} <= set(kept["aliases"])
    assert gone.status_code == 404
    assert [v["changeKind"] for v in theirs["versions"]] == ["deleted", "created"]
    assert len(ours["versions"]) == 2


def test_a_stale_edit_is_refused_and_the_page_offers_to_reload(
    browser: WebDriver, signed_in: Host
) -> None:
    """The page sends the version it showed; an agent's write since then is not undone."""
    go(browser, signed_in, "#/entity/campaign/summer-search")
    expect_title(browser, "Summer search")
    newer = {
        "type": "campaign",
        "name": "Summer search",
        "metadata": {"status": "paused", "budget": 95},
    }
    put(signed_in, "s-agent", newer)  # written after the page loaded
    browser.find_element(By.CSS_SELECTOR, "button[aria-label='Edit Budget']").click()
    field = wait_for(browser, By.ID, "edit-metadata-budget")
    field.clear()
    field.send_keys("120")
    field.submit()
    wait_text(browser, "#status", "changed since this page loaded")
    shot(browser, "05b-stale-edit")
    with httpx.Client(base_url=signed_in.base_url, timeout=60, headers=ADMIN) as c:
        stored = c.get(f"/v1/users/{USER}/entities/campaign/summer-search").json()
    assert stored["metadata"]["budget"] == 95 and stored["metadata"]["status"] == "paused"
    browser.find_element(By.XPATH, "//div[@id='status']//button[text()='Reload']").click()
    wait_text(browser, "table.facts", "95")


def test_the_context_preview_shows_the_block(browser: WebDriver, signed_in: Host) -> None:
    go(browser, signed_in, "#/context")
    expect_title(browser, "Context preview")
    wait_for(browser, By.ID, "task").send_keys("summer search budget")
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    block = wait_for(browser, By.CSS_SELECTOR, "pre.context-block")
    assert "<entity_memory" in block.text and "Summer search" in block.text
    shot(browser, "06-context")


def test_the_export_downloads_a_json_file(browser: WebDriver, signed_in: Host) -> None:
    go(browser, signed_in, "#/export")
    expect_title(browser, "Export")
    browser.find_element(By.ID, "export").click()
    target = ARTIFACTS / "downloads" / f"entity-memory-{USER}.json"
    wait(browser).until(lambda d: target.exists(), "no download")
    wait(browser).until(lambda d: _json_or_none(target) is not None)
    doc = _json_or_none(target)
    assert doc is not None and doc["userId"] == USER
    assert "Summer search" in {e["name"] for e in doc["entities"]}
    shot(browser, "07-export")


def _json_or_none(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def test_a_session_shows_what_was_extracted_and_what_was_rejected(
    browser: WebDriver, signed_in: Host
) -> None:
    go(browser, signed_in, "#/sessions")
    expect_title(browser, "Sessions")
    assert "s-talk" in [a.text for a in browser.find_elements(By.CSS_SELECTOR, "main tbody a")]
    jobs = browser.find_element(By.CSS_SELECTOR, 'main section[aria-label="Extraction jobs"]')
    talk = [
        row.text
        for row in jobs.find_elements(By.CSS_SELECTOR, "tbody tr")
        if row.find_element(By.CSS_SELECTOR, "a").text == "s-talk"
    ]
    assert talk and "done" in talk[0]  # the extraction ran as a job, and finished
    shot(browser, "08-sessions")
    go(browser, signed_in, "#/session/s-costs")
    expect_title(browser, "Session s-costs")
    names = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "main section a")]
    assert "Summer search" in names
    headings = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "main section h2")]
    assert headings == ["Extracted", "Rejected"]
    shot(browser, "09-session")


@pytest.mark.parametrize(
    "hash_",
    [
        "#/entities?type=all",
        "#/entity/metric/search-ctr",
        "#/session/s-costs",
        "#/sessions",
        "#/context",
        "#/users",
        "#/add",
    ],
)
def test_pages_fit_a_390_px_screen(browser: WebDriver, signed_in: Host, hash_: str) -> None:
    browser.set_window_size(390, 844)
    try:
        go(browser, signed_in, hash_)
        browser.refresh()
        wait(browser).until(
            lambda d: d.execute_script("return document.body.dataset.route === arguments[0]", hash_)
        )
        wide = browser.execute_script(
            "const w = document.documentElement.clientWidth;"
            "const over = [...document.querySelectorAll('body *')]"
            ".filter((e) => e.getBoundingClientRect().right > w + 1)"
            ".map((e) => e.tagName + '.' + e.className).slice(0, 5);"
            "return [document.documentElement.scrollWidth > w, over];"
        )
        assert wide == [False, []], f"{hash_} wider than 390 px: {wide}"
        name = hash_.strip("#/").replace("/", "-").replace("?", "-").replace("=", "-")
        shot(browser, f"10-phone-{name}")
    finally:
        browser.set_window_size(1280, 1000)
