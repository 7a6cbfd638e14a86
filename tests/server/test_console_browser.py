"""The console pages in one headless Chromium over a recorded multi-session store: the sessions
table (sort, filter, search hits, next page), a session's waterfall with its span details, a page of
stored XSS payloads that runs none of them, usage with CSV export, quality and gateway operations;
on SQLite and on PostgreSQL.
Screenshots go to tmp/test-artefacts/serve/console-*.png (never committed).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from store_backends import BACKENDS, _postgres_session  # noqa: F401

from .console_store import Recorded, console_server
from .server_support import LiveServer
from .test_web_view import ARTEFACTS, CHROMIUM, DRIVER, FLAGS, _browser_missing, _wait


@pytest.fixture(scope="module", params=BACKENDS)
def page(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
         _postgres_session: None) -> Iterator[tuple[Any, LiveServer, Recorded]]:  # noqa: F811
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the console browser tests must run in CI: {missing}")
        pytest.skip(missing)
    os.environ.setdefault("SE_OFFLINE", "true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    root: Path = tmp_path_factory.mktemp("console-browser")
    with console_server(root, request.param) as (server, recorded):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (*FLAGS, f"--user-data-dir={root / 'chromium-profile'}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(options=options, service=Service(executable_path=DRIVER))
        driver.implicitly_wait(0)
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        driver.get(server.launch_url())
        yield driver, server, recorded
        driver.quit()


def _rows(driver: Any) -> list[str]:
    """The table's session ids, read in one script (a re-render between reads cannot leave them stale)."""
    found: list[str] = driver.execute_script(
        "return [...document.querySelectorAll('#sessions tbody tr')].map((r) => r.dataset.sessionId)")
    return found


def _until(driver: Any, check: Any) -> None:
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 5, poll_frequency=0.02, ignored_exceptions=[
        StaleElementReferenceException, NoSuchElementException]).until(lambda d: check())


def test_the_sessions_table_sorts_filters_searches_and_pages(page: tuple[Any, LiveServer, Recorded]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver, server, r = page
    driver.get(server.url + "/#/")
    _wait(driver, "#sessions tbody tr")
    assert set(_rows(driver)) == {r.routed, r.flaky, r.hostile, r.refused}
    status = {row: driver.find_element(By.CSS_SELECTOR, f"tr[data-session-id='{row}'] .badge").text
              for row in _rows(driver)}
    assert status == {r.routed: "ok", r.flaky: "error", r.hostile: "cancelled", r.refused: "refused"}
    assert "cost unknown" in driver.find_element(By.CSS_SELECTOR, f"tr[data-session-id='{r.hostile}']").text
    driver.save_screenshot(str(ARTEFACTS / "console-1-sessions.png"))

    driver.find_element(By.CSS_SELECTOR, "a.sort[data-sort='cost']").click()
    _until(driver, lambda: "sort=cost" in driver.current_url and _rows(driver)[:1] == [r.flaky])
    assert driver.find_element(By.CSS_SELECTOR, "a.sort[data-sort='cost']").get_attribute("aria-sort") == "descending"

    Select(driver.find_element(By.ID, "session-filters-status")).select_by_value("error")
    driver.find_element(By.CSS_SELECTOR, "#session-filters button[type='submit']").click()
    _until(driver, lambda: _rows(driver) == [r.flaky])

    driver.get(server.url + "/#/?q=sunny")
    _until(driver, lambda: _rows(driver) == [r.routed])
    assert driver.find_element(By.CSS_SELECTOR, "#sessions .hit mark").text == "sunny"
    assert driver.find_element(By.ID, "session-search").get_attribute("value") == "sunny"
    driver.save_screenshot(str(ARTEFACTS / "console-2-search.png"))

    driver.get(server.url + "/#/?limit=3")
    _until(driver, lambda: len(_rows(driver)) == 3)
    first = _rows(driver)
    driver.find_element(By.ID, "next-page").click()
    _until(driver, lambda: len(_rows(driver)) == 1)
    assert set(first + _rows(driver)) == {r.routed, r.flaky, r.hostile, r.refused}
    assert driver.find_elements(By.ID, "first-page") and not driver.find_elements(By.ID, "next-page")


def test_the_waterfall_shows_spans_and_a_click_shows_their_events(page: tuple[Any, LiveServer, Recorded]) -> None:
    from selenium.webdriver.common.by import By

    driver, server, r = page
    driver.get(server.url + f"/#/session/{r.routed}")
    _wait(driver, "#timeline button.span")
    kinds = [b.get_attribute("data-kind") for b in driver.find_elements(By.CSS_SELECTOR, "#timeline button.span")]
    assert kinds == ["turn", "routing", "routing", "model call", "tool call", "model call"]
    call = driver.find_elements(By.CSS_SELECTOR, "#timeline button.span[data-kind='model call']")[0]
    assert "640 ms" in call.text and "120/30 tok" in call.text
    call.click()
    detail = driver.find_element(By.ID, "span-detail").text
    assert "llm.call_started" in detail and "llm.call_completed" in detail and '"latency_ms": 640' in detail
    assert driver.find_element(By.CSS_SELECTOR, "section[aria-labelledby='conv-h'] strong").text == "sunny"
    driver.save_screenshot(str(ARTEFACTS / "console-3-waterfall.png"))

    driver.get(server.url + f"/#/session/{r.flaky}")
    _wait(driver, "#timeline button.span.error")
    failed = driver.find_element(By.CSS_SELECTOR, "#timeline button.span.error")
    assert "2 retries" in failed.text and "error" in failed.text
    assert driver.find_element(By.CSS_SELECTOR, "#timeline button.span.retry .bar.retry")
    driver.save_screenshot(str(ARTEFACTS / "console-4-errors.png"))


def test_stored_xss_payloads_in_markdown_titles_and_ids_run_none(page: tuple[Any, LiveServer, Recorded]) -> None:
    from selenium.webdriver.common.by import By

    driver, server, r = page
    for where, ready in (("/#/", "#sessions tbody tr"), (f"/#/session/{r.hostile}", "article.msg.assistant .markdown"),
                         ("/#/costs?by=user", "#usage-groups"), ("/#/?q=xss", "#sessions .hit mark")):
        driver.get(server.url + where)
        _wait(driver, ready)
        assert driver.execute_script("return window.__xss === undefined"), where  # no payload ran
        assert not driver.find_elements(By.CSS_SELECTOR, "main img[src='x'], main svg[onload], main script, "
                                                         "main a[href^='javascript']"), where
    driver.get(server.url + f"/#/session/{r.hostile}")
    answer = _wait(driver, "article.msg.assistant .markdown")
    assert answer.find_element(By.TAG_NAME, "strong").text == "bold"  # type: ignore[attr-defined]
    assert "<script>window.__xss=5</script>" in answer.find_element(By.CSS_SELECTOR, "pre code").text  # type: ignore[attr-defined]
    assert "[click me](javascript:window.__xss=3)" in answer.text  # type: ignore[attr-defined]
    assert '<img src=x onerror="window.__xss=1">' in answer.text  # type: ignore[attr-defined]
    assert driver.execute_script("return window.__xss === undefined")
    driver.save_screenshot(str(ARTEFACTS / "console-5-xss.png"))
    console = [entry["message"] for entry in driver.get_log("browser")]
    assert not [m for m in console if "Content Security Policy" in m or "Uncaught" in m], console


def test_usage_quality_and_gateway_pages(page: tuple[Any, LiveServer, Recorded]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver, server, _ = page
    driver.get(server.url + "/#/costs")
    bar = _wait(driver, "#cost-chart rect.bar")
    assert float(bar.get_attribute("height")) > 1  # type: ignore[attr-defined]
    groups = driver.find_element(By.ID, "usage-groups").text
    assert "anthropic:claude-haiku-4-5" in groups and "cost unknown (1 call unpriced)" in groups
    Select(driver.find_element(By.ID, "usage-filters-by")).select_by_value("team")
    Select(driver.find_element(By.ID, "usage-filters-metric")).select_by_value("tokens")
    driver.find_element(By.CSS_SELECTOR, "#usage-filters button[type='submit']").click()
    _until(driver, lambda: "By team" in driver.find_element(By.ID, "usage-groups").text)
    assert "Tokens (in + out) per day" in driver.find_element(By.CSS_SELECTOR, "figure.chart").text
    driver.find_element(By.ID, "usage-csv").click()
    _until(driver, lambda: "Exported" in driver.find_element(By.ID, "status").text)
    driver.save_screenshot(str(ARTEFACTS / "console-6-usage.png"))

    driver.get(server.url + "/#/quality")
    _wait(driver, "#routing-decisions tbody tr")
    assert "similar trips went well" in driver.find_element(By.ID, "routing-decisions").text
    assert "0.90" in driver.find_element(By.ID, "quality-models").text
    driver.save_screenshot(str(ARTEFACTS / "console-7-quality.png"))

    driver.get(server.url + "/#/gateway")
    _wait(driver, "#gateway-models tbody tr")
    ops = driver.find_element(By.ID, "gateway-models").text
    assert "openai:gpt-4o" in ops and "33.3%" in ops and "2.10 s" in ops
    assert driver.find_element(By.CSS_SELECTOR, "#requests-chart rect.bar.has-errors")
    assert "key_blue" in driver.find_element(By.ID, "quota-refusals").text
    driver.save_screenshot(str(ARTEFACTS / "console-8-gateway.png"))
