"""The web view in a real headless Chromium (Debian's chromium + chromium-driver, via selenium):
a scripted session appears, its trace tree expands, live mode shows a new event within a second,
chat from the page streams its answer and takes a confirmation by click or keyboard,
the cost chart renders, the audit log and gateway keys list. Screenshots go to
tmp/test-artefacts/serve/ (never committed).

Without chromium the tests skip locally with the reason; under CI=true they fail instead.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from event_payload_samples import minimal
from support_servers import Reply

from .conftest import Served
from .server_support import chat_turn, script_weather_turn

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTEFACTS = Path(os.environ.get("METIS_TEST_ARTEFACTS", Path(__file__).parents[2] / "tmp" / "test-artefacts")) / "serve"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1366,900")


def _browser_missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
        return "chromium and chromium-driver are not installed (apt-get install -y chromium chromium-driver)"
    return None


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the web view tests must run in CI: {missing}")
        pytest.skip(missing)
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium must not look for drivers online
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # console: CSP violations show there
    driver = webdriver.Chrome(options=options, service=Service(executable_path=DRIVER))
    driver.implicitly_wait(0)
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()


def sign_in(driver: WebDriver, served: Served) -> None:
    """Open the one-time launch link `metis serve` prints: the page lands on `/` holding the cookie."""
    driver.get(served.server.launch_url())
    assert driver.current_url == served.server.url + "/"
    assert "token=" not in driver.current_url


def _wait(driver: object, css: str, timeout: float = 5.0) -> object:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.02).until(  # type: ignore[arg-type]
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, css)))


def test_a_scripted_session_its_trace_tree_live_mode_and_the_cost_chart_in_chromium(
    served: Served, browser: object,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver

    assert isinstance(browser, WebDriver)
    driver = browser
    script_weather_turn(served)
    session_id, _ = chat_turn(served, "allow_once")

    sign_in(driver, served)
    driver.get(served.server.url + "/#/")
    link = _wait(driver, "#sessions a.session-link")
    assert link.text == "weather"  # type: ignore[attr-defined]
    driver.save_screenshot(str(ARTEFACTS / "1-sessions.png"))

    link.click()  # type: ignore[attr-defined]
    _wait(driver, "#trace-tree li[data-type='turn.completed']")
    completed_call = driver.find_element(By.CSS_SELECTOR, "#trace-tree li[data-type='llm.call_completed']")
    assert not completed_call.is_displayed()  # nested under turn.started > llm.call_started, collapsed
    driver.find_element(By.ID, "expand-all").click()
    assert completed_call.is_displayed()
    assert "claude-haiku-4-5" in completed_call.text and "tokens" in completed_call.text and "ms" in completed_call.text
    roots = driver.find_elements(By.CSS_SELECTOR, "#trace-tree > li")
    assert [r.get_attribute("data-type") for r in roots] == ["session.created", "turn.started"]
    conversation = driver.find_element(By.CSS_SELECTOR, "section[aria-labelledby='conv-h']").text
    assert "What's the weather in SF?" in conversation and "get_weather" in conversation
    driver.save_screenshot(str(ARTEFACTS / "2-session-trace.png"))

    driver.find_element(By.ID, "live-toggle").click()
    _wait(driver, "#live-toggle[aria-pressed='true']")
    deadline = time.monotonic() + 5
    while "Following" not in driver.find_element(By.ID, "status").text:
        assert time.monotonic() < deadline, "the live stream never subscribed"
        time.sleep(0.02)
    event = served.runtime.bus.emit_new("session.resumed", minimal("session.resumed"), session_id=session_id)
    assert event is not None
    emitted = time.monotonic()
    _wait(driver, f"#live-log li[data-event-id='{event.id}']", timeout=1.0)
    shown_after = time.monotonic() - emitted
    assert shown_after < 1.0
    assert driver.find_elements(By.CSS_SELECTOR, f"#trace-tree li[data-event-id='{event.id}']")
    driver.save_screenshot(str(ARTEFACTS / "3-live.png"))

    driver.get(served.server.url + "/#/costs")
    bar = _wait(driver, "#cost-chart rect.bar")
    assert float(bar.get_attribute("height")) > 1  # type: ignore[attr-defined]
    costs = driver.find_element(By.TAG_NAME, "main").text
    assert "claude-haiku-4-5" in costs and "null" not in costs
    driver.save_screenshot(str(ARTEFACTS / "4-costs.png"))

    driver.get(served.server.url + "/#/audit")
    _wait(driver, "#audit tbody tr")
    assert "tool.confirmation_resolved" in driver.find_element(By.ID, "audit").text
    driver.save_screenshot(str(ARTEFACTS / "5-audit.png"))

    from metis_core.gateway.keys import KeyService, KeyTerms
    from metis_core.store.gateway_keys import SqliteGatewayKeyStore

    store = SqliteGatewayKeyStore(served.runtime.db_path)
    issued = KeyService(store, served.runtime.bus).issue(KeyTerms(name="laptop", rpm=30))
    store.close()
    driver.get(served.server.url + "/#/keys")
    _wait(driver, "#keys tbody tr")
    keys = driver.find_element(By.ID, "keys").text
    assert "laptop" in keys and issued.record.prefix in keys and issued.token not in driver.page_source
    assert "model" in driver.find_element(By.CSS_SELECTOR, "#keys tbody tr td:nth-child(2)").text
    driver.save_screenshot(str(ARTEFACTS / "6-keys.png"))


def test_the_session_search_form_filters_the_list(served: Served, browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver

    assert isinstance(browser, WebDriver)
    script_weather_turn(served)
    chat_turn(served, "deny")
    sign_in(browser, served)
    browser.get(served.server.url + "/#/")
    _wait(browser, "#sessions")
    box = browser.find_element(By.CSS_SELECTOR, "label[for='session-search'] + input")
    box.send_keys("zebra\n")
    _wait(browser, "main p")
    assert "No sessions found" in browser.find_element(By.TAG_NAME, "main").text


def _chat_page(browser: object, served: Served, script: list[Reply] | None = None) -> tuple[WebDriver, str]:
    """Script the upstream (the weather turn by default), start a session from the page on haiku;
    the driver and the new session's id."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support.ui import Select

    assert isinstance(browser, WebDriver)
    driver = browser
    if script is None:
        script_weather_turn(served)
    else:
        served.script.script("anthropic", script)

    sign_in(driver, served)
    driver.get(served.server.url + "/#/chat")
    model = _wait(driver, "#chat-model")
    options = [o.get_attribute("value") for o in Select(model).options]
    assert "anthropic:claude-haiku-4-5" in options  # the models of /api/models with a provider key
    Select(model).select_by_value("anthropic:claude-haiku-4-5")
    driver.find_element(By.CSS_SELECTOR, "label[for='chat-title'] + input").send_keys("from the page")
    driver.find_element(By.ID, "chat-start").click()
    box = _wait(driver, "#chat-input")
    assert driver.switch_to.active_element == box  # focus is where one types
    return driver, str(driver.execute_script("return location.hash")).removeprefix("#/chat/")


def test_a_message_sent_from_the_page_streams_its_answer_and_a_confirmation_is_answered_by_clicking(
    served: Served, browser: object,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver, session_id = _chat_page(browser, served)
    assert served.runtime.store.get_session(session_id).active_model == "anthropic:claude-haiku-4-5"
    driver.find_element(By.ID, "chat-input").send_keys("What's the weather in SF?", Keys.ENTER)
    confirm = _wait(driver, "#chat-log .confirm[role='group']")
    # The turn waits on the answer: what streamed so far is on the page already.
    log = driver.find_element(By.ID, "chat-log").text
    assert "What's the weather in SF?" in log and "I'll check the current weather in Paris for you." in log
    assert "get_weather" in log and '"location": "Paris"' in log  # the stored answer's tool call
    assert "Allow get_weather?" in confirm.text and "network" in confirm.text  # type: ignore[attr-defined]
    allow = driver.find_element(By.CSS_SELECTOR, ".confirm button[data-answer='allow_once']")
    assert driver.switch_to.active_element == allow  # the first answer has focus, for the keyboard
    assert driver.find_element(By.ID, "chat-input").get_attribute("disabled") is not None
    driver.save_screenshot(str(ARTEFACTS / "7-chat-confirmation.png"))

    allow.click()
    _wait(driver, "#chat-log article.msg.tool")
    _wait(driver, "#chat-input:not([disabled])")
    log = driver.find_element(By.ID, "chat-log").text
    assert "Paris: 73°F, clear" in log and log.rstrip().endswith("Hello there!")
    assert "Allowed once." in driver.find_element(By.CSS_SELECTOR, ".confirm").text
    assert not driver.find_elements(By.CSS_SELECTOR, "#chat-log .draft")  # every streamed answer was stored
    assert "Answer complete." in driver.find_element(By.ID, "status").text
    assert served.weather.calls == [{"location": "Paris"}]
    roles = [m.role.value for m in served.runtime.store.load_messages(session_id)]
    assert roles == ["user", "assistant", "tool", "assistant"]
    driver.save_screenshot(str(ARTEFACTS / "8-chat-answered.png"))

    driver.get(served.server.url + f"/#/session/{session_id}")  # the record shows the same turn
    _wait(driver, "#trace-tree li[data-type='tool.confirmation_resolved']")
    assert driver.find_element(By.ID, "chat-link").get_attribute("href").endswith(f"#/chat/{session_id}")


def test_a_confirmation_denied_with_the_keyboard_keeps_the_tool_from_running(served: Served, browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver, _ = _chat_page(browser, served)
    driver.find_element(By.ID, "chat-input").send_keys("What's the weather in SF?", Keys.ENTER)
    _wait(driver, ".confirm button[data-answer='allow_once']:focus")
    for _ in range(2):  # Allow once -> Allow for this session -> Deny
        driver.switch_to.active_element.send_keys(Keys.TAB)
    deny = driver.switch_to.active_element
    assert deny.get_attribute("data-answer") == "deny"
    deny.send_keys(Keys.ENTER)
    _wait(driver, "#chat-input:not([disabled])")
    assert "Denied." in driver.find_element(By.CSS_SELECTOR, ".confirm").text
    assert served.weather.calls == []
    assert "Hello there!" in driver.find_element(By.ID, "chat-log").text


def test_thinking_streams_into_a_disclosure_of_the_answer(served: Served, browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from metis_core.messages import TextBlock, ThinkingBlock

    thinking_stream = Reply.fixture("anthropic", "stream__thinking_delta_signature_delta.sse")
    driver, session_id = _chat_page(browser, served, [thinking_stream])
    driver.find_element(By.ID, "chat-input").send_keys("Think first.", Keys.ENTER)
    _wait(driver, "#chat-input:not([disabled])")
    [answer] = [m for m in served.runtime.store.load_messages(session_id) if m.role.value == "assistant"]
    thinking = next(b for b in answer.content if isinstance(b, ThinkingBlock)).text
    text = "".join(b.text for b in answer.content if isinstance(b, TextBlock))
    disclosure = driver.find_element(By.CSS_SELECTOR, "#chat-log article.assistant details.thinking")
    disclosure.find_element(By.TAG_NAME, "summary").click()
    assert thinking.strip()[:40] in disclosure.text
    assert text.strip()[:40] in driver.find_element(By.CSS_SELECTOR, "#chat-log article.assistant").text
    driver.save_screenshot(str(ARTEFACTS / "9-chat-thinking.png"))


def test_the_answer_is_shown_as_it_streams_before_the_upstream_has_finished(served: Served, browser: object) -> None:
    import threading

    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    release = threading.Event()
    reply = Reply.fixture("anthropic", "stream__text_basic.sse")
    reply.held_at, reply.release = b'"text":" there"', release  # the upstream stalls after "Hello"
    driver, _ = _chat_page(browser, served, [reply])
    driver.find_element(By.ID, "chat-input").send_keys("Say hello.", Keys.ENTER)
    try:
        draft = _wait(driver, "#chat-log article.draft[aria-busy='true'] pre")
        assert draft.text == "Hello"  # type: ignore[attr-defined]
        driver.save_screenshot(str(ARTEFACTS / "10-chat-streaming.png"))
    finally:
        release.set()
    _wait(driver, "#chat-input:not([disabled])")
    assert not driver.find_elements(By.CSS_SELECTOR, "#chat-log .draft")
    assert driver.find_elements(By.CSS_SELECTOR, "#chat-log article.assistant")[-1].text.endswith("Hello there!")


PAYLOADS = ['<img src=x onerror="window.__pwned=1">', '</script><script>window.__pwned=2</script>',
            '"><svg onload="window.__pwned=3">', "<iframe src=javascript:window.__pwned=4>"]


def test_stored_markup_in_titles_models_messages_tool_input_and_results_never_runs(
    served: Served, browser: object,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver

    from metis_core.messages import Message, MessageMetadata, Role, TextBlock, ToolResultBlock, ToolUseBlock
    from metis_core.messages.metadata import MessageStatus

    assert isinstance(browser, WebDriver)
    driver = browser
    hostile = " ".join(PAYLOADS)
    store = served.runtime.store
    record = store.create_session(served.workspace, active_model=PAYLOADS[0], title=hostile)
    store.append_messages([
        Message(session_id=record.id, role=Role.USER, content=[TextBlock(text=hostile)]),
        Message(session_id=record.id, role=Role.ASSISTANT, metadata=MessageMetadata(
            model=PAYLOADS[1], provider="anthropic", status=MessageStatus.PARTIAL),
                content=[TextBlock(text=hostile), ToolUseBlock(id="tu_01", name="get_weather",
                                                               input={"location": hostile})]),
        Message(session_id=record.id, role=Role.TOOL, metadata=MessageMetadata(parent_tool_use_id="tu_01"), content=[
            ToolResultBlock(tool_use_id="tu_01", content=[TextBlock(text=hostile)])]),
    ])
    sign_in(driver, served)
    for page, ready in (("/#/", "#sessions a.session-link"), (f"/#/session/{record.id}", "article.msg.tool"),
                        (f"/#/chat/{record.id}", "#chat-log article.msg.tool")):
        driver.get(served.server.url + page)
        _wait(driver, ready)
        assert driver.execute_script("return window.__pwned === undefined")  # no payload ran
        assert not driver.find_elements(By.CSS_SELECTOR, "main img[src='x'], main svg[onload], main iframe, "
                                                         "main script")  # every payload stayed text
        assert PAYLOADS[0] in driver.find_element(By.TAG_NAME, "main").text, page
    console = [entry["message"] for entry in driver.get_log("browser")]  # type: ignore[no-untyped-call]
    assert not [m for m in console if "Content Security Policy" in m], console  # the page's own code complies
