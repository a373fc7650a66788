"""Preflight (issue 11): `toolidx check --require` and describe_tool's `check`, against real
servers: a callable tool, a server that cannot start, a tool its server no longer lists, an
unknown id, scope and quarantine."""

from __future__ import annotations

import json
import shutil

import anyio
import pytest
from conftest import REPO, run_cli

pytestmark = [pytest.mark.slow]


def _config(serve_index, tmp_path, crashy_args=None, crashy_command=None):
    cfg = json.loads((serve_index.parent / "servers.json").read_text())
    if crashy_args is not None:
        cfg["mcpServers"]["crashy"]["args"] = crashy_args
    if crashy_command is not None:
        cfg["mcpServers"]["crashy"]["command"] = crashy_command
    p = tmp_path / f"servers-{len(list(tmp_path.iterdir()))}.json"
    p.write_text(json.dumps(cfg))
    return p


def _crashy_without_pid(tmp_path):
    v2 = tmp_path / "crashy_nopid.py"
    v2.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(REPO / 'tests' / 'servers')!r})\n"
        "import serve_crashy as s\n"
        "s.TOOLS[:] = [t for t in s.TOOLS if t['name'] != 'pid']\n"
        "s.main()\n"
    )
    return v2


def test_check_says_per_tool_whether_it_is_callable(serve_index, tmp_path):
    db = tmp_path / "p.db"
    shutil.copy(serve_index, db)
    good = _config(serve_index, tmp_path)
    r = run_cli("check", "--require", "time/get_current_time,crashy/echo", "--db", db, "--config", good, "--json")
    assert r.code == 0, r.stdout + r.stderr
    rep = r.json
    assert rep["command"] == "check" and rep["ok"] and rep["callable"] == 2
    for t in rep["tools"]:
        assert t["indexed"] and t["in_scope"] and t["server_started"] and t["listed"]
        assert t["definition"] == "same" and t["callable"] and t["approved"] is None

    # the server no longer lists one tool; an unknown id; a tool outside the scope
    nopid = _config(serve_index, tmp_path, crashy_args=[str(_crashy_without_pid(tmp_path))])
    r = run_cli(
        "check", "-r", "crashy/pid", "-r", "crashy/echo", "-r", "crashy/ech0", "--db", db, "--config", nopid, "--json"
    )
    assert r.code == 1
    by = {t["requested"]: t for t in r.json["tools"]}
    assert by["crashy/pid"]["server_started"] and by["crashy/pid"]["listed"] is False
    assert not by["crashy/pid"]["callable"] and "no longer lists it" in by["crashy/pid"]["reason"]
    assert by["crashy/echo"]["callable"] and by["crashy/echo"]["definition"] == "same"
    assert not by["crashy/ech0"]["indexed"] and by["crashy/ech0"]["suggestions"][0] == "crashy/echo"

    # a server that cannot start
    broken = _config(serve_index, tmp_path, crashy_command=str(tmp_path / "missing-binary"))
    r = run_cli(
        "check", "--require", "crashy/echo", "--require", "time/get_current_time", "--db", db, "--config", broken
    )
    assert r.code == 1
    lines = {ln.split("\t")[0]: ln.split("\t") for ln in r.stdout.splitlines()[1:]}
    assert lines["crashy/echo"][4] == "no" and lines["crashy/echo"][7] == "no"
    assert "missing-binary" in lines["crashy/echo"][8]
    assert lines["time/get_current_time"][7] == "yes"
    assert "1 callable, 1 not" in r.stderr

    # scope and quarantine, as serve applies them
    assert run_cli("approve", "crashy/echo", "--db", db).code == 0
    r = run_cli(
        "check",
        "-r",
        "crashy/echo,time/get_current_time",
        "--db",
        db,
        "--config",
        good,
        "--quarantine",
        "--server",
        "crashy",
        "--json",
    )
    assert r.code == 1
    by = {t["requested"]: t for t in r.json["tools"]}
    assert by["crashy/echo"]["approved"] == "approved" and by["crashy/echo"]["callable"]
    assert by["time/get_current_time"]["in_scope"] is False and not by["time/get_current_time"]["callable"]
    assert run_cli("check", "--db", db).code == 2  # nothing required


def test_describe_tool_check_runs_the_preflight_in_the_session(serve_index, tmp_path):
    from mcp import Client

    from toolidx.serve.server import build_server

    nopid = _config(serve_index, tmp_path, crashy_args=[str(_crashy_without_pid(tmp_path))])

    async def main():
        srv = build_server(serve_index, load_model=False, config_path=str(nopid))
        async with Client(srv, mode="legacy") as c:
            ok = await c.call_tool("describe_tool", {"tool_name": "crashy/echo", "check": True})
            gone = await c.call_tool("describe_tool", {"tool_name": "crashy/pid", "check": True})
            plain = await c.call_tool("describe_tool", {"tool_name": "crashy/echo"})
            return ok, gone, plain, [t.name for t in (await c.list_tools()).tools]

    ok, gone, plain, names = anyio.run(main)
    assert not ok.is_error and ok.structured_content["check"]["callable"] is True
    assert ok.structured_content["check"]["definition"] == "same" and "Check: callable" in ok.content[0].text
    g = gone.structured_content["check"]
    assert g["server_started"] and g["listed"] is False and not g["callable"]
    assert "NOT callable" in gone.content[0].text
    assert "check" not in plain.structured_content
    assert len(names) == 6  # no extra meta-tool: a mode of describe_tool
