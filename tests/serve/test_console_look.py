"""What a person sees in the web console (#45 item 8), in Debian's headless Chromium against a real
`serve --http` on test_console.py's index (the real servers, a hostile and a broken one) plus a
`look` server whose tool has long parameter names and a long description: the notice after
Approve, each tag once, table headings and parameter names never broken inside a word, one
no-match threshold, the usage chart's counts inside it, no sideways scroll at 420 px, addresses
without empty filters, the quarantine's counts in a token's scope, and `toolidx ui`'s spent link.
With TOOLIDX_CONSOLE_SHOTS set, the 420 px screenshots of docs/console/ are saved there."""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from pathlib import Path

import pytest
from conftest import raw_request, run_cli, token_file
from test_console import (
    ADMIN,
    READER,
    HttpSession,
    _host,
    chromium,
    make_console_index,
    shot,
    sign_in,
    spawn,
    three_time_calls,
    usage_page,
    wait,
)

pytestmark = [pytest.mark.servers, pytest.mark.slow]

READ_ONLY = "console-readonly-0123456789abcdef"
NARROW = 420
SEPARATED = ("source_timezone_of_the_meeting_organizer", "maximum-number-of-attendees-allowed")
LOOK_TOOLS = {
    "tools": [
        {
            "name": "schedule_meeting",
            "description": "Schedule a meeting across timezones. " + "It checks every attendee's calendar. " * 12,
            "inputSchema": {
                "type": "object",
                "properties": {
                    SEPARATED[0]: {"type": "string", "description": "IANA timezone of the organizer " * 6},
                    SEPARATED[1]: {"type": "integer", "minimum": 1, "description": "How many may come " * 6},
                    "aVeryLongCamelCaseParameterNameWithoutAnySeparatorsAtAll": {"type": "boolean"},
                },
                "required": list(SEPARATED),
            },
        }
    ]
}


@pytest.fixture(scope="module")
def look_index(serve_index, tmp_path_factory, model_path) -> Path:
    d = tmp_path_factory.mktemp("look")
    db = make_console_index(serve_index, d, model_path)
    cfg = json.loads((d / "servers.json").read_text())
    (d / "look-tools.json").write_text(json.dumps(LOOK_TOOLS))
    cfg["mcpServers"]["look"] = {"tools_file": str(d / "look-tools.json")}
    (d / "servers.json").write_text(json.dumps(cfg))
    r = run_cli("crawl", "--config", d / "servers.json", "--db", db, "--model-path", model_path, "--server", "look")
    assert r.code == 0, r.stderr
    return db


@pytest.fixture(scope="module")
def look(look_index, tmp_path_factory):
    """`serve --http` with an admin, a reader and a read-only token: its base URL."""
    d = tmp_path_factory.mktemp("look-serve")
    tokens = token_file(d, f"{ADMIN} admin\n{READER}\n{READ_ONLY} read-only\n")
    args = ["serve", "--db", str(look_index), "--http", "127.0.0.1:0", "--token-file", str(tokens)]
    with spawn([*args, "--usage-db", str(d / "usage.db")], d / "err") as (base, _):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the model loads at start: wait for hybrid search
            if json.loads(raw_request(base, "GET", "/healthz", {"Host": _host(base)})[1])["model"] != "loading":
                break
            time.sleep(0.2)
        yield base


@pytest.fixture(scope="module")
def browser():
    with chromium() as driver:
        yield driver


def width(driver, px: int) -> None:
    """The page `px` CSS pixels wide, as a phone's browser shows it."""
    driver.set_window_size(px, 900)
    assert driver.execute_script("return window.innerWidth") == px


# each text node's characters with the top of the line each sits on: where the top changes, the
# text wrapped; `[[char, top], ...]`
LINES_JS = """
const out = [];
const walk = document.createTreeWalker(arguments[0], NodeFilter.SHOW_TEXT);
for (let n = walk.nextNode(); n; n = walk.nextNode()) {
  for (let i = 0; i < n.length; i++) {
    const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
    const box = r.getClientRects()[0];
    if (box) out.push([n.data[i], Math.round(box.top)]);
  }
}
return out;
"""


def breaks(driver, element) -> str:
    """The text of `element` with "/" where a line ends: "source_/timezone"."""
    chars = driver.execute_script(LINES_JS, element)
    text = ""
    for i, (c, top) in enumerate(chars):
        if i and top > chars[i - 1][1] + 2:
            text += "/"
        text += c
    return text


def test_approve_says_what_it_approved_once(look, browser):
    from selenium.webdriver.common.by import By

    sign_in(browser, look, ADMIN)
    browser.get(look + "/quarantine?server=hostile")
    assert not browser.find_elements(By.ID, "notice")
    browser.find_element(By.CSS_SELECTOR, '.approve-btn[data-id="hostile/convert_document"]').click()
    notice = wait(browser, lambda d: d.find_elements(By.ID, "notice"))[0].text
    assert notice.startswith("approved 1 tool of hostile: convert_document, by console:file:tokens:1 at 20"), notice
    browser.refresh()  # said once: a reload does not say it again
    assert not browser.find_elements(By.ID, "notice")
    row = browser.find_element(By.XPATH, "//table[@id='approved']//tr[td/a[text()='hostile/convert_document']]")
    row.find_element(By.CSS_SELECTOR, ".revoke-btn").click()
    notice = wait(browser, lambda d: d.find_elements(By.ID, "notice"))[0].text
    assert notice == "revoked the approval of 1 tool of hostile: convert_document", notice
    # another session of the same token is told nothing of it
    with HttpSession(look, ADMIN) as s:
        assert 'id="notice"' not in s.get("/quarantine?server=hostile")[1]


def test_a_tools_tags_show_once_and_its_table_breaks_only_between_words(look, browser):
    from selenium.webdriver.common.by import By

    sign_in(browser, look, READER)
    browser.get(look + "/tool?id=time/get_current_time")
    chips = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".facts .tag, .facts .hint-tag")]
    assert sorted(chips) == ["idempotent", "read-only"], chips  # was "read-only idempotent read-only idempotent"
    for px in (1280, 700):
        width(browser, px)
        browser.get(look + "/tool?id=look/schedule_meeting")
        for th in browser.find_elements(By.CSS_SELECTOR, "#params th, #history th"):
            assert not re.search(r"\w/\w", breaks(browser, th)), (px, breaks(browser, th))  # was "requi/red"
        names = browser.find_elements(By.CSS_SELECTOR, "#params td:first-child code")
        assert len(names) == 3
        for code in names:
            shown = breaks(browser, code)
            if shown.replace("/", "") in SEPARATED:  # wrapped, then only after a _ or a -
                assert all(shown[i - 1] in "_-" for i, c in enumerate(shown) if c == "/"), (px, shown)
        assert browser.execute_script("return document.documentElement.scrollWidth") <= px
    width(browser, 1280)


def test_no_good_match_names_one_threshold(look, browser):
    from selenium.webdriver.common.by import By

    q = "bake sourdough bread with rye flour"
    sign_in(browser, look, READER)
    browser.get(look + "/?" + urllib.parse.urlencode({"q": q}))
    assert browser.find_element(By.ID, "no-match").is_displayed()
    text = browser.find_element(By.ID, "results").text
    api = json.loads(
        raw_request(
            look,
            "GET",
            "/v1/search?" + urllib.parse.urlencode({"q": q}),
            {"Host": _host(look), "Authorization": f"Bearer {READER}"},
        )[1]
    )
    # the calibrated threshold, once and at one precision (was "above 0.03", then "threshold 0.029");
    # or, where the far gate turned it away (search.gate), the words the catalog lacks instead
    said = re.findall(r"(?:above|threshold) (\d+\.\d+)", text)
    assert said in ([], [f"{api['threshold']:.3f}"]), text
    assert said or "not in the catalog: bake, sourdough, bread" in text, text
    assert text.count("no good match") + text.count("No good match") == 1, text
    # and one click shows the best anyway, as min_score=0 does
    browser.find_element(By.ID, "show-anyway").click()
    hits = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#hits .tool-link"))
    assert browser.current_url.endswith("&min_score=0") and hits


def test_the_usage_charts_counts_sit_inside_it(look, browser):
    from selenium.webdriver.common.by import By

    three_time_calls(look)
    sign_in(browser, look, READER)
    for px in (1280, NARROW):
        width(browser, px)
        usage_page(browser, look)
        chart = browser.find_element(By.ID, "chart")
        values = chart.find_elements(By.CSS_SELECTOR, ".value")
        assert [v.text for v in values] == ["3"]
        box = browser.execute_script("return arguments[0].getBoundingClientRect().toJSON()", chart)
        for v in values:  # the whole label inside the chart and the page (was cut at the chart's edge)
            r = browser.execute_script("return arguments[0].getBoundingClientRect().toJSON()", v)
            assert box["left"] <= r["left"] and r["right"] <= box["right"], (px, r, box)
            assert r["right"] <= px
    width(browser, 1280)


def test_nothing_scrolls_sideways_at_420_px(look, browser):
    sign_in(browser, look, ADMIN)
    width(browser, NARROW)
    try:
        for path, name in (
            ("/?" + urllib.parse.urlencode({"q": "what time is it in another timezone"}), "search-420"),
            ("/tool?id=time/convert_time", "tool-420"),
            ("/tool?id=look/schedule_meeting", None),
            ("/tool?id=hostile/evil", None),
            ("/servers", None),
            ("/changes", None),
            ("/quarantine?server=hostile", None),
            ("/usage", None),
        ):
            browser.get(look + path)
            wide = browser.execute_script("return document.documentElement.scrollWidth")
            assert wide <= NARROW, (path, wide)  # the navigation overflowed at 420 px
            if name:
                shot(browser, name)
        browser.delete_all_cookies()
        browser.get(look + "/login")
        assert browser.execute_script("return document.documentElement.scrollWidth") <= NARROW
    finally:
        width(browser, 1280)


def test_a_search_address_carries_only_what_was_chosen(look, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    # without JavaScript: the form's GET is answered by a redirect to the address without its empties
    with HttpSession(look, READER) as s:
        status, _ = s.get("/?q=store+facts&server=memory&tag=&category=&mode=hybrid&k=10&name_pattern=")
        assert status == 303 and s.headers["location"] == "/?q=store+facts&server=memory"
        status, page = s.get("/?q=store+facts&server=memory")
        assert status == 200 and "memory/" in page
        assert s.get("/?q=&server=&k=10")[0] == 303 and s.headers["location"] == "/"
    sign_in(browser, look, READER)
    browser.get(look + "/")
    browser.find_element(By.ID, "q").send_keys("store facts")
    browser.find_element(By.CSS_SELECTOR, "details summary").click()
    Select(browser.find_element(By.ID, "f-server")).select_by_visible_text("memory")
    browser.find_element(By.ID, "go").click()
    wait(browser, lambda d: "q=store" in d.current_url)
    assert browser.current_url == look + "/?q=store+facts&server=memory", browser.current_url
    ids = [h.text for h in wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#hits .tool-link"))]
    assert ids and all(i.startswith("memory/") for i in ids)
    # search as you type (console.js): the address it writes has no empties either
    browser.get(look + "/")
    browser.find_element(By.ID, "q").send_keys("read a file from disk")
    wait(browser, lambda d: "q=read" in d.current_url)
    assert browser.current_url == look + "/?q=read+a+file+from+disk", browser.current_url


def _quarantine_counts(page: str) -> tuple[list[str], str, int]:
    row = re.search(r'<tr class="current">.*?</tr>', page, re.S)
    assert row, page[:2000]
    cells = re.findall(r"<td>(?:<span[^>]*>)?(\d+)", row.group(0))
    summary = re.search(r'id="summary">([^<]*)', page)
    assert summary, page[:2000]
    return cells, summary.group(1), page.count("<article ")


def test_the_quarantine_counts_agree_in_a_tokens_scope(look):
    """A read-only token sees 10 of filesystem's 14 tools: the table's row for the server shown,
    the summary below it and the tools listed all count those 10 (the issue saw 7 against 12)."""
    with HttpSession(look, READ_ONLY) as s:
        listed = re.findall(r'href="/quarantine\?server=([^"]+)"', s.get("/quarantine")[1])
        assert "filesystem" in listed and "hostile" not in listed
        for server in listed:
            (never, changed), summary, tools = _quarantine_counts(s.get(f"/quarantine?server={server}")[1])
            assert summary == f"{never} never approved, {changed} changed since approval.", (server, summary)
            assert tools == int(never) + int(changed), server
    with HttpSession(look, READER) as s:
        (never, _), _, _ = _quarantine_counts(s.get("/quarantine?server=filesystem")[1])
    with HttpSession(look, READ_ONLY) as s:
        (scoped, _), _, _ = _quarantine_counts(s.get("/quarantine?server=filesystem")[1])
    assert int(scoped) < int(never)  # the scope is narrower indeed


def test_a_spent_ui_link_offers_no_token_form(look_index, tmp_path):
    """`toolidx ui` users never get a token: a spent link, or /login after signing out, says to
    run `toolidx ui` again and shows no token field."""
    out = tmp_path / "ui.out"
    args = ["ui", "--db", str(look_index), "--no-open", "--usage-db", str(tmp_path / "u.db")]
    with open(out, "w") as outf, spawn(args, tmp_path / "ui.err", stdout=outf) as (base, _):
        deadline = time.monotonic() + 30
        while "once=" not in out.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        path = out.read_text().split()[0][len(base) :]
        host = {"Host": _host(base)}
        assert raw_request(base, "GET", path, host)[0] == 200
        for asked, status in ((path, 403), ("/login", 200)):
            got, body = raw_request(base, "GET", asked, host)
            page = body.decode()
            assert got == status and "run <code>toolidx ui</code> again" in page, page
            assert 'id="token"' not in page and "Token" not in page and "bearer" not in page
