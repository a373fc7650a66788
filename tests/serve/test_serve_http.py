"""`toolidx serve --http` end to end: a real `toolidx serve --http 127.0.0.1:0` subprocess, the real
mcp client over Streamable HTTP (several at once), the search API over real HTTP, bearer tokens
with their scopes, shared backends, a slow tool that stalls nobody else, and the start-up errors."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import anyio
import pytest
from conftest import MCP_HEADERS, MCP_INIT, listening_url, raw_request, run_cli, token_file

pytestmark = [pytest.mark.servers, pytest.mark.slow]

TOOLIDX = [sys.executable, "-m", "toolidx"]
ADMIN = "admin-token-0123456789abcdef"
TIME_ONLY = "time-token-0123456789abcdef"
CRASHY_RO = "crashy-ro-token-0123456789ab"
ENV_TOKEN = "env-token-0123456789abcdefgh"


@contextlib.contextmanager
def spawn(db, err, *flags, env=None, ssl_context=None, address="127.0.0.1:0", loaded=True):
    """`toolidx serve --db DB --http ADDRESS FLAGS` as a subprocess: yields its base URL once
    it listens and (unless not `loaded`) its model is loaded; stopped with SIGTERM after."""
    with open(err, "w") as errf:
        proc = subprocess.Popen(
            [*TOOLIDX, "serve", "--db", str(db), "--http", address, *flags],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errf,
            env={**os.environ, **(env or {})},
        )
    try:
        deadline = time.monotonic() + 60
        base = listening_url(proc, err)
        while loaded and time.monotonic() < deadline:  # the model loads at start: wait for hybrid search
            if get(base, "/healthz", context=ssl_context)[1]["model"] in ("ready", "unavailable"):
                break
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            assert proc.wait(timeout=20) in (0, -signal.SIGTERM)  # uvicorn re-raises SIGTERM once it has stopped
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
            raise


@pytest.fixture(scope="module")
def http_server(serve_index, tmp_path_factory):
    """One serve --http process for the module: (base_url, stderr path)."""
    d = tmp_path_factory.mktemp("http")
    tokens = token_file(
        d, f"# team tokens\n{ADMIN}\n\n{TIME_ONLY} servers=time\n{CRASHY_RO}   servers=crashy,time read-only\n"
    )
    err = d / "serve.err"
    with spawn(
        serve_index,
        err,
        "--token-file",
        tokens,
        "--token-env",
        "TEAM_TOKEN",
        "--usage-db",
        d / "usage.db",
        env={"TEAM_TOKEN": ENV_TOKEN},
    ) as base:
        yield base, err  # the usage file: err's folder / usage.db
    assert ADMIN not in err.read_text() and TIME_ONLY not in err.read_text()  # tokens are never logged


def get(base, path, token=None, context=None, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params, doseq=True) if params else "")
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=30, context=context) as r:
            return r.status, json.loads(r.read()), {k.lower(): v for k, v in r.headers.items()}
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null"), {k.lower(): v for k, v in e.headers.items()}


def mcp_client(base, token, verify=None):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"} if token else None)
    if verify is not None:  # HTTPS with a certificate the default trust store does not hold
        import httpx2

        http = httpx2.AsyncClient(headers=dict(http.headers), timeout=http.timeout, verify=verify)
    return http, Client(streamable_http_client(base + "/mcp", http_client=http), mode="legacy")


async def with_client(base, token, body, verify=None):
    http, client = mcp_client(base, token, verify)
    async with http, client as c:
        return await body(c)


async def call(c, name, args):
    r = await c.call_tool(name, args)
    return r.structured_content, r.is_error


# --- authentication --------------------------------------------------------------------------------
def test_requests_without_a_valid_token_get_401(http_server):
    base, _ = http_server
    init = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    ).encode()
    for headers, invalid in (
        ({}, False),
        ({"Authorization": "Bearer wrong-token-0123456789abc"}, True),
        ({"Authorization": f"Basic {ADMIN}"}, False),
    ):
        req = urllib.request.Request(
            base + "/mcp",
            data=init,
            method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        )
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 401
        challenge = e.value.headers["WWW-Authenticate"]
        assert challenge.startswith("Bearer") and ('error="invalid_token"' in challenge) == invalid
    status, body, headers = get(base, "/v1/search", q="current time")
    assert status == 401 and body["error"] == "unauthorized" and headers["www-authenticate"].startswith("Bearer")
    assert get(base, "/v1/search", "not-a-token-0123456789", q="time")[0] == 401
    assert get(base, "/healthz")[0] == 200  # open to load balancers

    async def body_(c):
        raise AssertionError("connected without a token")

    with pytest.raises(BaseException) as refused:  # the real client is refused too
        anyio.run(with_client, base, None, body_)
    assert "connected without a token" not in str(refused.value)


def test_oauth_discovery_finds_no_oauth_so_a_static_token_is_just_used(http_server):
    """MCP clients answer a 401 with OAuth discovery; the SDK's OAuth client treats any answer but
    200 or 404 from the discovery URLs as a failed OAuth flow ("interactive OAuth required")
    instead of "bad token". Every URL the SDK's own discovery tries gets a plain 404 with no
    challenge, and the 401 names no resource_metadata."""
    from mcp.client.auth.utils import (
        build_oauth_authorization_server_metadata_discovery_urls,
        build_protected_resource_metadata_discovery_urls,
    )

    base, _ = http_server
    urls = build_protected_resource_metadata_discovery_urls(None, base + "/mcp")
    urls += build_oauth_authorization_server_metadata_discovery_urls(None, base + "/mcp")
    urls += build_oauth_authorization_server_metadata_discovery_urls(base + "/mcp", base + "/mcp")
    urls += [
        base + "/.well-known/oauth-protected-resource",
        base + "/.well-known/oauth-authorization-server",
        base + "/register",
        base + "/authorize",
        base + "/token",
    ]
    assert any(u.endswith("/.well-known/oauth-protected-resource/mcp") for u in urls)
    for url in urls:
        path = url.removeprefix(base)
        for token in (None, "wrong-token-0123456789abc", ADMIN):
            status, body, headers = get(base, path, token)
            assert status == 404 and "www-authenticate" not in headers and body["error"] == "not_found", (path, token)
    status, _, headers = get(base, "/v1/search", "wrong-token-0123456789abc", q="x")
    assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]
    assert "resource_metadata" not in headers["www-authenticate"]


def test_mcp_over_http_with_a_token(http_server):
    base, _ = http_server

    async def body(c):
        tools = [t.name for t in (await c.list_tools()).tools]
        found, err = await call(c, "search_tools", {"query": "what time is it now"})
        echoed = await c.call_tool("execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "hi"}})
        return tools, found, err, echoed

    for token in (ADMIN, ENV_TOKEN):
        tools, found, err, echoed = anyio.run(with_client, base, token, body)
        assert tools == [
            "search_tools",
            "list_tools",
            "describe_tool",
            "execute_tool",
            "get_tool_categories",
            "get_similar_tools",
        ]
        assert not err and found["mode_used"] == "hybrid" and found["hits"][0]["id"].startswith("time/")
        assert not echoed.is_error and echoed.structured_content == {"text": "hi"}


def test_several_clients_at_once_share_the_backends(http_server):
    base, _ = http_server
    queries = [
        "current time in a timezone",
        "echo a text back",
        "store a memory entity",
        "list a directory",
        "convert time between zones",
        "read a file",
    ]

    async def one(q, out):
        async def body(c):
            found, _ = await call(c, "search_tools", {"query": q, "limit": 3})
            pid = await c.call_tool("execute_tool", {"tool_name": "crashy/pid", "arguments": {}})
            return found, pid.content[0].text

        out.append(await with_client(base, ADMIN, body))

    async def main():
        out: list = []
        async with anyio.create_task_group() as tg:
            for q in queries:
                tg.start_soon(one, q, out)
        return out

    results = anyio.run(main)
    assert len(results) == len(queries)
    assert all(found["hits"] for found, _ in results)
    assert len({pid for _, pid in results}) == 1  # one backend process for every client


def test_a_slow_tool_does_not_stall_another_clients_search(http_server):
    base, _ = http_server
    events: list = []

    async def slow(c):
        r = await c.call_tool("execute_tool", {"tool_name": "crashy/sleep", "arguments": {"seconds": 5}})
        events.append(("slow done", time.monotonic()))
        return r

    async def fast(c):
        await anyio.sleep(1.0)  # the slow call is under way
        found, _ = await call(c, "search_tools", {"query": "what time is it"})
        events.append(("search done", time.monotonic()))
        return found

    async def main():
        out: dict = {}

        async def run(name, token, body):
            out[name] = await with_client(base, token, body)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "slow", ADMIN, slow)
            tg.start_soon(run, "fast", TIME_ONLY, fast)
        return out

    out = anyio.run(main)
    assert not out["slow"].is_error and out["slow"].content[0].text == "awake"
    assert out["fast"]["hits"]
    # answered while the 5 s call ran: by order of events, not a stopwatch
    assert [e[0] for e in sorted(events, key=lambda e: e[1])] == ["search done", "slow done"]


def test_token_scope_narrows_search_execute_and_the_api(http_server):
    base, _ = http_server

    async def time_only(c):
        found, _ = await call(
            c, "search_tools", {"query": "echo a text back", "filters": {"min_score": 0}, "limit": 10}
        )
        # asking for a server outside the token's scope widens nothing
        asked, _ = await call(c, "search_tools", {"query": "echo", "filters": {"servers": ["crashy"], "min_score": 0}})
        refused, is_error = await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "x"}})
        cats, _ = await call(c, "get_tool_categories", {})
        return found, asked, refused, is_error, cats

    found, asked, refused, is_error, cats = anyio.run(with_client, base, TIME_ONLY, time_only)
    assert found["hits"] and all(h["id"].startswith("time/") for h in found["hits"])
    assert asked["hits"] == []
    assert is_error and refused["error"] == "unknown_tool"  # a token is not told which ids exist outside its scope
    assert [s["name"] for s in cats["servers"]] == ["time"]

    async def crashy_ro(c):
        ok = await c.call_tool("execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "x"}})
        refused, is_error = await call(c, "execute_tool", {"tool_name": "crashy/crash", "arguments": {}})
        return ok, refused, is_error

    ok, refused, is_error = anyio.run(with_client, base, CRASHY_RO, crashy_ro)
    assert not ok.is_error
    assert is_error and refused["error"] == "unknown_tool"  # not read-only: outside its scope, so unknown
    # each call is recorded with the scope it ran in: its token's, not the whole server's ("")
    from toolidx.store.sqlite.file import sqlite_module

    want = {("crashy/echo", "refused", "servers=time"), ("crashy/echo", "ok", "read_only=True; servers=crashy,time")}
    deadline, rows = time.monotonic() + 10, set()
    while time.monotonic() < deadline and not want <= rows:  # written in batches, off the request path
        time.sleep(0.2)
        conn = sqlite_module().connect(str(http_server[1].parent / "usage.db"))
        rows = set(conn.execute("SELECT tool_id, outcome, scope FROM calls WHERE tool_id = 'crashy/echo'"))
        conn.close()
    assert want <= rows, rows

    status, body, _ = get(base, "/v1/search", TIME_ONLY, q="echo a text back", min_score=0, k=20)
    assert status == 200 and body["hits"] and {h["server"] for h in body["hits"]} == {"time"}
    status, body, _ = get(base, "/v1/search", TIME_ONLY, q="echo", server="crashy", min_score=0)
    assert status == 200 and body["hits"] == []
    status, body, _ = get(base, "/v1/search", ADMIN, q="echo a text back")
    assert body["hits"][0]["id"] == "crashy/echo"


def test_a_new_crawl_is_announced_to_every_session(serve_index, tmp_path):
    db = tmp_path / "live.db"
    shutil.copy(serve_index, db)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{ADMIN}\n{TIME_ONLY} servers=time\n")
    seen: dict = {ADMIN: 0, TIME_ONLY: 0}

    async def client(base, token, crawled):
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async def on_message(m):
            if getattr(m, "method", None) == "notifications/tools/list_changed":
                seen[token] += 1

        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(
                streamable_http_client(base + "/mcp", http_client=http), mode="legacy", message_handler=on_message
            ) as c,
        ):
            await c.list_tools()
            await crawled.wait()
            with anyio.fail_after(15):
                while not seen[token]:
                    await anyio.sleep(0.05)
            return await call(c, "describe_tool", {"tool_name": "weather/get_forecast"})

    async def main(base):
        crawled = anyio.Event()
        out: dict = {}

        async def run(token):
            out[token] = await client(base, token, crawled)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, ADMIN)
            tg.start_soon(run, TIME_ONLY)
            await anyio.sleep(2)  # both sessions open (and their GET streams)
            r = await anyio.to_thread.run_sync(
                lambda: run_cli(
                    "crawl",
                    "--config",
                    serve_index.parent / "servers.json",
                    "--db",
                    db,
                    "--server",
                    "weather",
                    "--model",
                    "none",
                )
            )
            assert r.code == 0, r.stderr
            crawled.set()
        return out

    with spawn(db, tmp_path / "serve.err", "--token-file", tokens, "--poll", "0.1") as base:
        out = anyio.run(main, base)
    assert seen == {ADMIN: 1, TIME_ONLY: 1}
    found, is_error = out[ADMIN]
    assert not is_error and found["id"] == "weather/get_forecast"
    refused, is_error = out[TIME_ONLY]
    # outside the token's scope reads as unknown: which ids exist there is not its business (#42 item 12)
    assert is_error and refused["error"] == "unknown_tool"


def test_a_session_answers_only_the_token_that_opened_it(http_server):
    base, _ = http_server
    init = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    ).encode()
    listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()

    def post(body, token, session=None):
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": "2025-06-18",
        }
        if session:
            headers["Mcp-Session-Id"] = session
        req = urllib.request.Request(base + "/mcp", data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                r.read()
                return r.status, r.headers.get("Mcp-Session-Id")
        except urllib.error.HTTPError as e:
            return e.code, None

    status, sid = post(init, ADMIN)
    assert status == 200 and sid
    assert post(listing, TIME_ONLY, sid)[0] == 404  # another token: as if the session did not exist
    assert post(listing, ADMIN, sid)[0] in (200, 202)


# --- Host and Origin (DNS rebinding) ----------------------------------------------------------------
def rebinding_answers(base, host_ok):
    """Every route as a DNS-rebinding page would ask it (its own name as Host, or a foreign
    Origin), and as the real client would: the statuses, by route."""
    routes = [
        ("GET", "/healthz", {}, None),
        ("GET", "/openapi.json", {}, None),
        ("GET", "/v1/search?q=echo", {}, None),
        ("POST", "/mcp", MCP_HEADERS, MCP_INIT),
    ]
    port = urllib.parse.urlsplit(base).port
    out = {}
    for method, path, headers, body in routes:
        out[path] = (
            raw_request(base, method, path, {**headers, "Host": host_ok}, body)[0],
            raw_request(base, method, path, {**headers, "Host": f"rebind.attacker.example:{port}"}, body)[0],
            raw_request(base, method, path, {**headers, "Host": host_ok.rsplit(":", 1)[0] + ":1"}, body)[0],
            raw_request(
                base,
                method,
                path,
                {**headers, "Host": host_ok, "Origin": f"http://rebind.attacker.example:{port}"},
                body,
            )[0],
            raw_request(base, method, path, {**headers, "Host": host_ok, "Origin": "null"}, body)[0],
        )
    return out


def test_foreign_host_or_origin_is_refused_on_every_loopback_bind(serve_index, tmp_path):
    """Token-free loopback binds other than exactly 127.0.0.1/localhost/::1 (which the SDK's own
    check covered) answered a rebinding page's Host, execute_tool included. Now every route checks
    Host (421) and Origin (403) for whatever address is bound."""
    binds = ["127.0.0.2:0"]
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET6) as s6:
        s6.bind(("::1", 0))
        binds.append("[0:0:0:0:0:0:0:1]:0")  # ::1 spelled out: no exact match for the SDK's list
    for address in binds:
        with spawn(serve_index, tmp_path / "serve.err", address=address) as base:
            port = urllib.parse.urlsplit(base).port
            here = base.removeprefix("http://")
            answers = rebinding_answers(base, here)
            for path, (ok, foreign_host, other_port, foreign_origin, null_origin) in answers.items():
                assert ok == 200 and (foreign_host, other_port, foreign_origin, null_origin) == (421, 421, 403, 403), (
                    address,
                    path,
                    answers[path],
                )
            # localhost, the address in another spelling and a same-origin browser page pass
            assert raw_request(base, "GET", "/healthz", {"Host": f"localhost:{port}"})[0] == 200
            assert raw_request(base, "GET", "/healthz", {"Host": here, "Origin": base})[0] == 200
            if "[" in here:
                assert raw_request(base, "GET", "/healthz", {"Host": f"[::1]:{port}"})[0] == 200
            status, body = raw_request(base, "GET", "/v1/search?q=x", {"Host": f"evil.example:{port}"})
            assert json.loads(body)["error"] == "misdirected_request"
    log = (tmp_path / "serve.err").read_text()
    assert log.count("does not name this server") <= 2  # one line per kind per 10 s, not one per request


def test_allow_host_and_allow_origin_widen_the_check(serve_index, tmp_path):
    with spawn(
        serve_index,
        tmp_path / "serve.err",
        "--allow-host",
        "tools.lan",
        "--allow-origin",
        "https://app.example:8443",
        address="127.0.0.2:0",
    ) as base:
        here = base.removeprefix("http://")
        assert raw_request(base, "GET", "/healthz", {"Host": "tools.lan"})[0] == 200
        assert raw_request(base, "GET", "/healthz", {"Host": "tools.lan:8080"})[0] == 200  # behind a proxy
        assert raw_request(base, "GET", "/healthz", {"Host": "other.lan"})[0] == 421
        assert raw_request(base, "GET", "/healthz", {"Host": here, "Origin": "https://app.example:8443"})[0] == 200
        assert raw_request(base, "GET", "/healthz", {"Host": here, "Origin": "https://app.example"})[0] == 403
    r = run_cli("serve", "--db", serve_index, "--http", "0", "--allow-origin", "app.example")
    assert r.code == 2 and "not an origin" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run_cli("serve", "--db", serve_index, "--allow-host", "tools.lan")
    assert r.code == 2 and "need --http" in r.stderr


def test_the_printed_http_entry_connects(serve_index, tmp_path):
    """`serve --print-config --client claude-code --http PORT --token-env VAR` prints an entry a real
    MCP client connects with, once the placeholder is the token."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = run_cli(
        "serve",
        "--db",
        serve_index,
        "--print-config",
        "--client",
        "claude-code",
        "--http",
        str(port),
        "--token-env",
        "TEAM_TOKEN",
        "--json",
    )
    entry = r.json["config"]["mcpServers"]["toolidx"]
    headers = {k: v.replace("<your token>", ENV_TOKEN) for k, v in entry["headers"].items()}

    async def listing():
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with (
            create_mcp_http_client(headers=headers) as http,
            Client(streamable_http_client(entry["url"], http_client=http), mode="legacy") as c,
        ):
            return [t.name for t in (await c.list_tools()).tools]

    with spawn(
        serve_index,
        tmp_path / "serve.err",
        "--token-env",
        "TEAM_TOKEN",
        env={"TEAM_TOKEN": ENV_TOKEN},
        address=f"127.0.0.1:{port}",
    ):
        assert "search_tools" in anyio.run(listing)


# --- the search API --------------------------------------------------------------------------------
def test_v1_search_answers_the_json_of_search_json(http_server, serve_index):
    base, _ = http_server
    for q, params, flags in (
        ("what time is it", {"k": 3}, ["--limit", "3"]),
        (
            "store a memory entity",
            {"k": 5, "server": "memory", "mode": "keyword"},
            ["--limit", "5", "--server", "memory", "--mode", "keyword"],
        ),
        ("bake a chocolate cake", {}, []),
    ):
        status, body, headers = get(base, "/v1/search", ADMIN, q=q, **params)
        assert status == 200 and headers["content-type"].startswith("application/json")
        r = run_cli("search", q, "--db", serve_index, "--json", *flags)
        # the same answer; its hints name the API's parameters, not the CLI's flags
        cli = {**r.json, "notes": [n.replace("--min-score 0", "min_score=0") for n in r.json["notes"]]}
        assert body == cli, q
    assert body["no_match"] is True and body["hits"] == []  # the calibrated "no good match"
    assert any("(min_score=0 shows it anyway)" in n for n in body["notes"]) and "--" not in json.dumps(body)
    for bad in (
        {},
        {"q": "x", "k": 0},
        {"q": "x", "k": "many"},
        {"q": "x", "mode": "magic"},
        {"q": "x", "read_only": "perhaps"},
        {"q": "x", "min_score": 2},
        {"q": "x" * 4001},
        {"q": "x", "name_pattern": "(a)\\1"},
        {"q": "x", "name_pattern": "a" * 501},
    ):
        status, body, _ = get(base, "/v1/search", ADMIN, **bad)
        assert status == 400 and body["command"] == "error" and body["message"], bad
        assert "--" not in body["message"], body  # its own parameter names (min_score), not the CLI's


def test_openapi_document_is_valid(http_server):
    from openapi_spec_validator import validate

    base, _ = http_server
    status, doc, _ = get(base, "/openapi.json")
    assert status == 200
    validate(doc)
    assert doc["openapi"].startswith("3.1")
    op = doc["paths"]["/v1/search"]["get"]
    assert {p["name"] for p in op["parameters"]} >= {
        "q",
        "k",
        "server",
        "tag",
        "category",
        "read_only",
        "min_score",
        "mode",
    }
    assert doc["servers"] == [{"url": base}]


# --- start-up errors ---------------------------------------------------------------------------------
def test_start_up_errors_are_one_line_exit_2(serve_index, tmp_path, monkeypatch):
    def fails(*args, want):
        r = run_cli("serve", "--db", serve_index, *args)
        assert r.code == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and want in lines[0], (args, r.stderr)
        assert r.stdout == ""
        return lines[0]

    fails("--http", "0.0.0.0:0", want="bearer token is required on a non-loopback address")
    fails("--http", "80:80:x", want="not a [HOST:]PORT")
    fails("--http", "127.0.0.1:99999", want="not a [HOST:]PORT")
    fails("--http", "0", "--token-file", tmp_path / "none", want="no such file")
    (tmp_path / "empty").write_text("# nothing yet\n\n")
    fails("--http", "0", "--token-file", tmp_path / "empty", want="holds no token")
    (tmp_path / "short").write_text("abc\n")
    fails("--http", "0", "--token-file", tmp_path / "short", want="line 1: a token must be 16 or more")
    (tmp_path / "scope").write_text(f"{ADMIN} colour=blue\n")
    line = fails("--http", "0", "--token-file", tmp_path / "scope", want="line 1: unknown scope")
    assert ADMIN not in line
    (tmp_path / "unknown").write_text(f"{ADMIN} servers=nope\n")
    fails("--http", "0", "--token-file", tmp_path / "unknown", want="servers=nope: not in the index")
    (tmp_path / "dir").mkdir()
    fails("--http", "0", "--token-file", tmp_path / "dir", want="cannot be read")
    monkeypatch.delenv("NO_SUCH_TOKEN_VAR", raising=False)
    fails("--http", "0", "--token-env", "NO_SUCH_TOKEN_VAR", want="not set or empty")
    fails("--token-file", tmp_path / "empty", want="need --http")
    fails("--tls-cert", tmp_path / "empty", want="need --http")
    fails("--http", "0", "--tls-cert", tmp_path / "empty", want="--tls-cert and --tls-key go together")
    fails(
        "--http",
        "0",
        "--tls-cert",
        tmp_path / "none.pem",
        "--tls-key",
        tmp_path / "none.key",
        want="--tls-cert " + str(tmp_path / "none.pem") + ": no such file",
    )
    fails("--http", "0", "--tls-cert", tmp_path / "empty", "--tls-key", tmp_path / "empty", want="cannot be used")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        fails("--http", str(port), want=f"127.0.0.1:{port}: address already in use")


def test_https_with_a_certificate(serve_index, tmp_path):
    """--tls-cert/--tls-key: the same server over HTTPS; a client that trusts the certificate gets
    answers, plain HTTP on that port gets none."""
    import ssl

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            key,
            "-out",
            cert,
        ],
        check=True,
        capture_output=True,
    )
    trust = ssl.create_default_context(cafile=str(cert))
    with spawn(
        serve_index,
        tmp_path / "serve.err",
        "--tls-cert",
        cert,
        "--tls-key",
        key,
        "--token-env",
        "TEAM_TOKEN",
        env={"TEAM_TOKEN": ENV_TOKEN},
        ssl_context=trust,
    ) as base:
        assert base.startswith("https://127.0.0.1:")
        status, body, _ = get(base, "/v1/search", ENV_TOKEN, context=trust, q="echo a text back")
        assert status == 200 and body["hits"][0]["id"] == "crashy/echo"
        status, doc, _ = get(base, "/openapi.json", context=trust)
        assert doc["servers"] == [{"url": base}]
        assert get(base, "/v1/search", context=trust, q="echo")[0] == 401  # TLS is no token

        async def over_mcp(c):
            found, _ = await call(c, "search_tools", {"query": "echo a text back"})
            echoed = await c.call_tool("execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "tls"}})
            return found, echoed

        found, echoed = anyio.run(with_client, base, ENV_TOKEN, over_mcp, trust)
        assert found["hits"][0]["id"] == "crashy/echo" and echoed.content[0].text == "tls"
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):  # not trusted
            get(base, "/healthz", context=ssl.create_default_context())
        with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
            get("http://" + base.removeprefix("https://"), "/healthz")  # plain HTTP: no answer
    # a passphrase-protected key is refused in one line (it would otherwise prompt on a terminal)
    subprocess.run(
        ["openssl", "pkey", "-in", key, "-out", tmp_path / "enc.key", "-aes256", "-passout", "pass:pw"],
        check=True,
        capture_output=True,
    )
    r = run_cli("serve", "--db", serve_index, "--http", "0", "--tls-cert", cert, "--tls-key", tmp_path / "enc.key")
    assert r.code == 2 and "the private key is encrypted" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_sigterm_stops_the_shared_backends(serve_index, tmp_path):
    async def body(c):
        r = await c.call_tool("execute_tool", {"tool_name": "crashy/pid", "arguments": {}})
        return int(r.content[0].text)

    with spawn(serve_index, tmp_path / "serve.err") as base:  # loopback, no token
        pid = anyio.run(with_client, base, None, body)
        os.kill(pid, 0)  # the backend runs while serve does
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"backend {pid} still running after serve stopped")


@pytest.mark.parametrize("front", ["v1", "mcp"])
def test_the_first_semantic_search_waits_for_the_model(serve_index, model_path, tmp_path, front):
    """/v1/search, or search_tools over MCP, as the first request while the model is still
    loading: it waits for it (one policy, serve/discovery.Model, as over stdio) and ranks by
    meaning, instead of answering by keywords."""
    env = {"TOOLIDX_MODEL_PATH": model_path}
    with spawn(serve_index, tmp_path / "serve.err", env=env, loaded=False) as base:
        if front == "mcp":

            async def first(c):
                return await call(c, "search_tools", {"query": "current time in a timezone", "search_type": "semantic"})

            body, failed = anyio.run(with_client, base, None, first)
            assert not failed and body["mode_used"] == "semantic", body
        else:
            status, body, _ = get(base, "/v1/search", q="current time in a timezone", mode="semantic", k=3)
            assert status == 200 and body["mode_used"] == "semantic", body
            assert all(h["signals"]["cosine"] is not None for h in body["hits"])
        assert body["hits"][0]["id"].startswith("time/")
        assert not any("loading" in n for n in body.get("notes", []))
