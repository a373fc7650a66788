"""The web console of `toolidx serve --http`, in a real browser: Debian's headless Chromium driven
by Selenium (its own chromedriver, no browser download) against a real `serve --http` subprocess
on the real servers' index, crawled three times: the real servers, then a hostile `tools_file`
server and a server that fails to start, then the hostile server changed (a breaking change to a
tool a person had approved). Plus the same checks a browser cannot make: CSRF, the headers, a
non-admin token, the one-time link of `toolidx ui`, and the hint without Jinja2.

Without Chromium these tests skip locally and fail under CI=true (.ci/run installs it)."""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
from conftest import IN_CI, RAW, SERVE_URL, listening_url, raw_request, run_cli

pytestmark = [pytest.mark.servers, pytest.mark.slow]

TOOLIDX = [sys.executable, "-m", "toolidx"]
ADMIN = "console-admin-0123456789abcdef"
READER = "console-reader-0123456789abcdef"
TIME_ONLY = "console-time-0123456789abcdef"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SHOTS = os.environ.get("TOOLIDX_CONSOLE_SHOTS")  # a folder: save a screenshot of each page there (docs)

PWN = "window.__pwned = 1"
EVIL = (
    f"Reads a file. <script>{PWN}</script> [click me](javascript:{PWN}) "
    f'<a href="javascript:{PWN}">here</a> <img src=x onerror="{PWN}"> '
    f'<svg onload="{PWN}"></svg> {{{{ 7*7 }}}} \u202eesrever'
)


def hostile_tools(version: int) -> dict:
    """A tools_file server: `evil` with markup and script in every text, `convert` whose
    second version renames a parameter and adds a required one (breaking)."""
    convert_props = {"path": {"type": "string", "description": "The <b>input</b> file"}}
    required = ["path"]
    if version == 2:
        convert_props = {
            "source": {"type": "string", "description": "The input file"},
            "format": {"type": "string", "enum": ["pdf", "txt"]},
        }
        required = ["source", "format"]
    return {
        "tools": [
            {
                "name": "evil",
                "title": f"<img src=x onerror=\"{PWN}\">Evil",
                "description": EVIL,
                "inputSchema": {
                    "type": "object",
                    "properties": {"q": {"type": "string", "description": f"<script>{PWN}</script>"}},
                },
            },
            {
                "name": "convert_document",
                "description": "Convert a document file to another format"
                + (" (pdf or plain text)." if version == 2 else "."),
                "inputSchema": {"type": "object", "properties": convert_props, "required": required},
            },
        ]
    }


@pytest.fixture(scope="module")
def console_index(serve_index, tmp_path_factory, model_path) -> Path:
    return make_console_index(serve_index, tmp_path_factory.mktemp("console"), model_path)


def make_console_index(serve_index: Path, d: Path, model_path) -> Path:
    """serve_index copied into `d`, then two more crawls of the hostile and the broken server (the
    others kept), with `hostile` approved in between: crawls 1 (real servers), 2, 3."""
    db = d / "console.db"
    shutil.copy(serve_index, db)
    cfg = json.loads((serve_index.parent / "servers.json").read_text())
    tools = d / "hostile-tools.json"
    cfg["mcpServers"]["hostile"] = {"tools_file": str(tools), "tags": ["untrusted"]}
    cfg["mcpServers"]["broken"] = {"command": sys.executable, "args": [str(RAW), "--mode", "crash-start"]}
    (d / "servers.json").write_text(json.dumps(cfg))
    for version in (1, 2):
        tools.write_text(json.dumps(hostile_tools(version)))
        r = run_cli(
            "crawl", "--config", d / "servers.json", "--db", db, "--model-path", model_path,
            "--server", "hostile", "--server", "broken",
        )  # fmt: skip
        assert r.code in (0, 1), r.stderr  # 1: `broken` failed, as it should
        if version == 1:
            assert run_cli("approve", "--db", db, "--server", "hostile").code == 0
    return db


@contextlib.contextmanager
def spawn(args, err: Path, pattern=SERVE_URL, env=None, stdout=None):
    """A toolidx subprocess: yields (base URL, process) once it listens; SIGTERM after."""
    with open(err, "w") as errf:
        proc = subprocess.Popen(
            [*TOOLIDX, *args],
            stdin=subprocess.DEVNULL,
            stdout=stdout or subprocess.DEVNULL,
            stderr=errf,
            env={**os.environ, **(env or {})},
        )
    try:
        base = listening_url(proc, err, pattern)
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture(scope="module")
def console(console_index, tmp_path_factory):
    """`serve --http` on the console index with three tokens: (base URL, stderr path)."""
    d = tmp_path_factory.mktemp("console-serve")
    tokens = d / "tokens"
    tokens.write_text(f"{ADMIN} admin\n{READER}\n{TIME_ONLY} servers=time\n")
    err = d / "serve.err"
    args = ["serve", "--db", str(console_index), "--http", "127.0.0.1:0", "--token-file", str(tokens)]
    with spawn([*args, "--usage-db", str(d / "usage.db")], err) as (base, _):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the model loads at start: wait for hybrid search
            if json.loads(raw_request(base, "GET", "/healthz", {"Host": _host(base)})[1])["model"] != "loading":
                break
            time.sleep(0.2)
        yield base, err
    text = err.read_text()
    assert ADMIN not in text and READER not in text  # tokens are never logged


def _host(base: str) -> str:
    return urllib.parse.urlsplit(base).netloc


# --- the browser ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    with chromium() as driver:
        yield driver


@contextlib.contextmanager
def chromium():
    """Debian's headless Chromium under Selenium (skips without it; fails under CI)."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        msg = "Chromium missing: apt-get install -y chromium chromium-driver"
        if IN_CI:
            pytest.fail(f"{msg} (CI installs it in .ci/run)", pytrace=False)
        pytest.skip(msg)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def sign_in(driver, base: str, token: str) -> None:
    from selenium.webdriver.common.by import By

    driver.delete_all_cookies()
    driver.get(base + "/")
    assert urllib.parse.urlsplit(driver.current_url).path == "/login"  # no session: the login form
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "signin").click()
    wait(driver, lambda d: urllib.parse.urlsplit(d.current_url).path == "/")


def wait(driver, cond, timeout: float = 30):
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout).until(cond)
    except TimeoutException:
        pytest.fail(f"waited {timeout} s at {driver.current_url}: {driver.page_source[:3000]}")


def shot(driver, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(SHOTS) / f"{name}.png"))


def untouched(driver) -> None:
    """No script of a server's ran: no flag set, no alert open, no console error from CSP aside."""
    from selenium.common.exceptions import NoAlertPresentException

    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018
    from selenium.webdriver.common.by import By

    assert not driver.find_elements(By.CSS_SELECTOR, "main img, main svg[onload], main script")
    for a in driver.find_elements(By.CSS_SELECTOR, "a[href]"):
        assert not a.get_attribute("href").lower().startswith("javascript:"), a.get_attribute("outerHTML")


def test_search_then_a_tool_page_in_the_browser(console, browser):
    from selenium.webdriver.common.by import By

    base, _ = console
    sign_in(browser, base, READER)
    box = browser.find_element(By.ID, "q")
    box.send_keys("what time is it in another timezone")
    browser.find_element(By.ID, "go").click()
    hits = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#hits .tool-link"))
    ids = [h.text for h in hits]
    # the same ranking as the search API (and so as `toolidx search --json`)
    api = json.loads(
        raw_request(
            base,
            "GET",
            "/v1/search?" + urllib.parse.urlencode({"q": "what time is it in another timezone"}),
            {"Host": _host(base), "Authorization": f"Bearer {READER}"},
        )[1]
    )
    assert ids == [h["id"] for h in api["hits"]] and ids[0].startswith("time/")
    scores = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#hits .score")]
    assert scores[0] == f"{api['hits'][0]['score']:.2f}"
    assert browser.find_elements(By.CSS_SELECTOR, "#hits .why")  # why it matched
    shot(browser, "search")
    hits[0].click()
    wait(browser, lambda d: d.find_elements(By.ID, "tool-id"))
    assert browser.find_element(By.ID, "tool-id").text == ids[0]
    rows = browser.find_elements(By.CSS_SELECTOR, "#params tbody tr")
    assert rows and "timezone" in rows[0].text.lower()
    assert json.loads(browser.find_element(By.ID, "example").text) is not None
    shot(browser, "tool")
    untouched(browser)

    # nothing fits: "no good match", as the CLI says
    browser.get(base + "/?" + urllib.parse.urlencode({"q": "bake sourdough bread with rye flour"}))
    assert browser.find_element(By.ID, "no-match").is_displayed()

    # search as you type (console.js): results come without pressing Search
    browser.get(base + "/")
    browser.find_element(By.ID, "q").send_keys("read a file from disk")
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#hits .tool-link"))
    assert "q=read" in browser.current_url  # the address follows, so the page can be shared

    # a filter narrows the results (server=memory)
    browser.get(base + "/?" + urllib.parse.urlencode({"q": "store facts", "server": "memory"}))
    ids = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#hits .tool-link")]
    assert ids and all(i.startswith("memory/") for i in ids)
    # a bad filter is the API's one-line error, on the page
    browser.get(base + "/?" + urllib.parse.urlencode({"q": "store facts", "name_pattern": "(unclosed"}))
    assert "name_pattern" in browser.find_element(By.ID, "problem").text


def test_a_diff_between_two_crawls_field_by_field(console, browser):
    from selenium.webdriver.common.by import By

    base, _ = console
    sign_in(browser, base, READER)
    browser.get(base + "/changes")  # default: the latest crawl against the one before
    summary = browser.find_element(By.ID, "summary").text
    assert "crawl 2 → 3" in summary and "1 breaking" in summary, summary
    art = browser.find_element(By.CSS_SELECTOR, 'article[data-id="hostile/convert_document"]')
    assert "breaking" in art.get_attribute("class")
    text = art.text
    assert "format" in text and "source" in text  # the new required parameter, the rename
    assert art.find_elements(By.CSS_SELECTOR, "ins")  # the description's word diff
    shot(browser, "changes")
    # pick the crawls in the form: 1 -> 2 adds the hostile server (and the audit flags its text)
    # the tool's own history links to the same diff
    browser.get(base + "/tool?id=hostile/convert_document")
    history = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#history tbody tr")]
    assert history[0].startswith("3 ") and "changed" in history[0] and "added" in history[1], history
    browser.find_element(By.CSS_SELECTOR, "#history a").click()
    assert "crawl 2 → 3" in wait(browser, lambda d: d.find_element(By.ID, "summary")).text
    browser.get(base + "/changes?from=1&to=2")
    added = browser.find_element(By.CSS_SELECTOR, 'article[data-id="hostile/evil"]')
    assert "added" in added.text.lower()
    untouched(browser)
    browser.get(base + "/servers")
    broken = browser.find_element(By.XPATH, "//table[@id='servers']//tr[td/a[text()='broken']]")
    assert "failed" in broken.text
    assert browser.find_elements(By.CSS_SELECTOR, "#crawls tbody tr")
    shot(browser, "servers")


def test_approve_with_an_admin_token_and_not_without(console, browser):
    from selenium.webdriver.common.by import By

    base, _ = console
    # a reader sees what awaits approval but no button; a forged POST with its own valid CSRF token
    # is refused all the same
    sign_in(browser, base, READER)
    browser.get(base + "/quarantine")
    assert browser.find_element(By.CSS_SELECTOR, 'article[data-id="hostile/convert_document"]')
    assert not browser.find_elements(By.CSS_SELECTOR, ".approve-btn")
    with HttpSession(base, READER) as s:
        status, body = s.post("/quarantine/approve", {"id": "hostile/convert_document"})
        assert status == 403 and "admin" in body
    assert not _approved_on_page(browser, base)["hostile/convert_document"][0].startswith("console:")

    sign_in(browser, base, ADMIN)
    browser.get(base + "/quarantine")
    art = browser.find_element(By.CSS_SELECTOR, 'article[data-id="hostile/convert_document"]')
    assert "changed" in art.text.lower() and "breaking" in art.get_attribute("class")  # field-level, vs approved
    shot(browser, "quarantine")
    art.find_element(By.CSS_SELECTOR, ".approve-btn").click()
    wait(browser, lambda d: d.find_elements(By.ID, "approved"))
    assert not browser.find_elements(By.CSS_SELECTOR, 'article[data-id="hostile/convert_document"]')
    got = _approved_on_page(browser, base)["hostile/convert_document"]
    assert got[0] == "console:file:tokens:1" and got[1].startswith("20")  # who (the token's label), and when
    # and revoke it again, from the page
    row = browser.find_element(By.XPATH, "//table[@id='approved']//tr[td/a[text()='hostile/convert_document']]")
    row.find_element(By.CSS_SELECTOR, ".revoke-btn").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, 'article[data-id="hostile/convert_document"]'))
    assert "hostile/convert_document" not in _approved_on_page(browser, base)


def _approved_on_page(driver, base: str) -> dict[str, tuple[str, str]]:
    """The quarantine page's table of approvals: id -> (by, at)."""
    from selenium.webdriver.common.by import By

    driver.get(base + "/quarantine")
    rows = driver.find_elements(By.CSS_SELECTOR, "#approved tbody tr")
    cells = [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in rows]
    return {c[0]: (c[1], c[2]) for c in cells}


def test_a_hostile_description_is_only_text(console, browser):
    from selenium.webdriver.common.by import By

    base, _ = console
    sign_in(browser, base, READER)
    browser.get(base + "/tool?id=hostile/evil")
    desc = browser.find_element(By.ID, "description").text
    assert "<script>" in desc and "javascript:" in desc and "onerror" in desc  # shown, as text
    assert "{{ 7*7 }}" in desc  # no template evaluation either
    assert "\\u202e" in desc  # the bidi override made visible
    untouched(browser)
    shot(browser, "hostile")
    browser.get(base + "/?" + urllib.parse.urlencode({"q": "evil reads a file", "tag": "untrusted"}))
    assert "hostile/evil" in [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#hits .tool-link")]
    untouched(browser)
    browser.get(base + "/quarantine")
    untouched(browser)


def three_time_calls(base: str) -> None:
    """time/get_current_time run three times through /mcp, as ADMIN."""
    import anyio
    from test_serve_http import call, with_client

    async def calls(c):
        for _ in range(3):
            await call(c, "execute_tool", {"tool_name": "time/get_current_time", "arguments": {"timezone": "UTC"}})

    anyio.run(with_client, base, ADMIN, calls)


def usage_page(browser, base: str) -> None:
    """/usage, reloaded until its summary counts three_time_calls' 3 calls (20 s at most)."""
    from selenium.webdriver.common.by import By

    browser.get(base + "/usage")
    deadline = time.monotonic() + 20
    while "3 calls" not in browser.find_element(By.ID, "summary").text and time.monotonic() < deadline:
        time.sleep(0.3)  # calls are recorded off the request path
        browser.refresh()


def test_usage_page_after_calls(console, browser):
    """Calls through /mcp show up per tool and per server, with a chart."""
    from selenium.webdriver.common.by import By

    base, _ = console
    three_time_calls(base)
    sign_in(browser, base, READER)
    usage_page(browser, base)
    row = browser.find_element(By.XPATH, "//table[@id='tools']//tr[td/a[text()='time/get_current_time']]")
    assert row.text.split()[1:3] == ["3", "100%"]
    assert browser.find_elements(By.CSS_SELECTOR, "#chart rect")
    shot(browser, "usage")


# --- what a browser cannot show -------------------------------------------------------------------------
class HttpSession(contextlib.AbstractContextManager):
    """A signed-in session over plain HTTP, as a script (or a forger) would drive the forms."""

    def __init__(self, base: str, token: str):
        self.base, self.host, self.cookies = base, _host(base), {}
        status, body = self.get("/login")
        self.post("/login", {"token": token, "csrf": _csrf(body)}, keep_csrf=True)

    def __exit__(self, *exc):
        return None

    def _send(self, method, path, body=None, extra=None):
        import http.client

        u = urllib.parse.urlsplit(self.base)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        headers = {"Host": self.host, **(extra or {})}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            for k, v in r.getheaders():
                if k.lower() == "set-cookie":
                    name, _, rest = v.partition("=")
                    value = rest.split(";", 1)[0].strip('"')
                    if "max-age=0" in v.lower() or not value:
                        self.cookies.pop(name, None)
                    else:
                        self.cookies[name] = value
            self.headers = {k.lower(): v for k, v in r.getheaders()}
            return r.status, r.read().decode()
        finally:
            conn.close()

    def get(self, path, **extra):
        return self._send("GET", path, extra=extra)

    def post(self, path, form, keep_csrf=False, extra=None):
        if not keep_csrf and "csrf" not in form:
            form = {**form, "csrf": _csrf(self.get("/")[1])}
        return self._send("POST", path, urllib.parse.urlencode(form), extra)


def _csrf(page: str) -> str:
    m = re.search(r'name="csrf" value="([^"]*)"', page)
    assert m, page[:500]
    return html.unescape(m.group(1))


def test_forms_need_their_csrf_token_and_pages_a_session(console):
    base, _ = console
    host = {"Host": _host(base)}
    # no session: every page sends to the login form, and approving is refused
    status, _ = raw_request(base, "GET", "/servers", host)
    assert status == 303
    form = urllib.parse.urlencode({"id": "hostile/evil"}).encode()
    status, _ = raw_request(
        base, "POST", "/quarantine/approve", {**host, "Content-Type": "application/x-www-form-urlencoded"}, form
    )
    assert status == 403
    with HttpSession(base, ADMIN) as s:
        assert s.get("/servers")[0] == 200
        # an admin's session, but a form without its token (or with another session's): refused
        assert s.post("/quarantine/approve", {"id": "hostile/evil", "csrf": ""})[0] == 403
        with HttpSession(base, READER) as other:
            theirs = _csrf(other.get("/")[1])
        assert s.post("/quarantine/approve", {"id": "hostile/evil", "csrf": theirs})[0] == 403
        # a page on another origin posting with the cookie: HostGuard's 403, as for the rest of serve
        status, _ = s.post("/quarantine/approve", {"id": "hostile/evil"}, extra={"Origin": "https://evil.example"})
        assert status == 403
        # the headers of every page: the CSP, no sniffing, no referrer, no framing
        s.get("/tool?id=hostile/evil")
        h = s.headers
        assert h["content-security-policy"].startswith("default-src 'self'; script-src 'self'; object-src 'none'")
        assert (
            "frame-ancestors 'none'" in h["content-security-policy"]
            and "base-uri 'none'" in h["content-security-policy"]
        )
        assert h["x-content-type-options"] == "nosniff" and h["referrer-policy"] == "same-origin"
    # a token scoped to one server sees only it
    with HttpSession(base, TIME_ONLY) as s:
        assert s.get("/tool?id=hostile/evil")[0] == 404
        page = s.get("/servers")[1]
        assert ">time<" in page and ">hostile<" not in page
    # the console's paths only: OAuth discovery and unknown paths still answer serve's plain 404
    for path in ("/.well-known/oauth-protected-resource", "/register", "/nope"):
        assert raw_request(base, "GET", path, host)[0] == 404


def test_login_cookie_flags_and_a_wrong_token(console):
    import http.client

    base, _ = console
    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("GET", "/login", headers={"Host": u.netloc})
    r = conn.getresponse()
    page, pre = r.read().decode(), r.getheader("set-cookie")
    conn.close()
    cookie = pre.split(";", 1)[0]
    body = urllib.parse.urlencode({"token": "not-a-token-at-all-000", "csrf": _csrf(page)}).encode()
    headers = {"Host": u.netloc, "Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}
    status, answer = raw_request(base, "POST", "/login", headers, body)
    assert status == 401 and "not accepted" in answer.decode()
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    body = urllib.parse.urlencode({"token": READER, "csrf": _csrf(page)}).encode()
    conn.request("POST", "/login", body=body, headers=headers)
    r = conn.getresponse()
    flags = [c for c in r.headers.get_all("set-cookie") if c.startswith(f"toolidx_session_{u.port}=")][0].lower()
    conn.close()
    assert r.status == 303 and "httponly" in flags and "samesite=strict" in flags and "path=/" in flags


def test_toolidx_ui_opens_once_behind_its_link(console_index, tmp_path):
    out = tmp_path / "ui.out"
    with (
        open(out, "w") as outf,
        spawn(
            ["ui", "--db", str(console_index), "--no-open", "--usage-db", str(tmp_path / "u.db")],
            tmp_path / "ui.err",
            stdout=outf,
        ) as (base, _),
    ):
        deadline = time.monotonic() + 30
        while "once=" not in out.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        link = out.read_text().split()[0]
        assert link.startswith(base + "/login?once=") and urllib.parse.urlsplit(base).hostname == "127.0.0.1"
        host = {"Host": _host(base)}
        path = link[len(base) :]
        assert raw_request(base, "GET", "/", host)[0] == 303  # no session, no way in
        assert raw_request(base, "GET", "/mcp", host)[0] == 401  # nor for MCP: a token nobody was shown
        status, _ = raw_request(base, "GET", path, host)
        assert status == 200  # the link opens a session (a page that goes on to /) ...
        status, body = raw_request(base, "GET", path, host)
        assert status == 403 and b"already used" in body  # ... once


def test_without_jinja2_the_console_says_to_reinstall(serve_index, tmp_path):
    """Jinja2 is a dependency (#45 item 1): an install that lost it is told to reinstall toolidx,
    not to install an extra from a package index toolidx is not on."""
    code = (
        "import sys; sys.modules['jinja2'] = None; from toolidx.cli.main import main; "
        f"main(['serve', '--db', {str(serve_index)!r}, '--http', '127.0.0.1:0'])"
    )
    err = tmp_path / "err"
    with open(err, "w") as errf:
        proc = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf
        )
    try:
        base = listening_url(proc, err)
        status, body = raw_request(base, "GET", "/", {"Host": _host(base)})
        text = body.decode()
        assert status == 501 and text.count("\n") == 1 and "reinstall toolidx" in text and "[console]" not in text
        # the rest of serve works without it
        assert raw_request(base, "GET", "/healthz", {"Host": _host(base)})[0] == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
