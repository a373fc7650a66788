"""serve/execute.call_tool's named result: which tool a call meant, its server and the outcome the
usage file keeps, for each way a call can end before the tool runs (a keyword-only index of saved
tool lists: nothing is started)."""

from __future__ import annotations

import anyio
from conftest import REPO, crawl

from toolidx.serve.backends import BackendPool, SpecSource
from toolidx.serve.discovery import Discovery
from toolidx.serve.execute import CallOutcome, call_tool
from toolidx.store.tools import get_server


def test_call_tool_names_tool_server_and_outcome(tmp_path):
    db = tmp_path / "c.db"
    assert crawl(REPO / "tests" / "data" / "catalog" / "servers.yaml", db).code == 0
    disc = Discovery(str(db))
    source = SpecSource(server_row=lambda n: get_server(disc.db, n), db_path=str(db), trust_index=True)

    async def run() -> list[CallOutcome]:
        async with BackendPool(source) as pool:
            return [
                await call_tool(disc, pool, name, args, 5.0, alternative="ask again")
                for name, args in (
                    ("nope", {}),
                    ("git_status", {}),
                    ("git.git_status", {}),
                    ("git/git_status", {"repo_path": "/r"}),
                )
            ]

    unknown, ambiguous, invalid, unavailable = anyio.run(run)
    assert (unknown.tool_id, unknown.server, unknown.outcome) == ("nope", "", "refused")
    assert unknown.result["isError"] and unknown.result["structuredContent"]["error"] == "unknown_tool"
    # one vocabulary of codes (core.errors): every refusal carries its code as `code` too
    assert [c.result["structuredContent"]["code"] for c in (unknown, ambiguous, invalid, unavailable)] == [
        "unknown_tool",
        "ambiguous_tool",
        "invalid_arguments",
        "backend_unavailable",
    ]
    assert (ambiguous.tool_id, ambiguous.server, ambiguous.outcome) == ("git_status", "", "refused")
    assert (invalid.tool_id, invalid.server, invalid.outcome) == ("git/git_status", "git", "invalid_arguments")
    # a saved tool list has no server to run: the call fails as a backend failure, with the alternative
    assert (unavailable.tool_id, unavailable.server, unavailable.outcome) == ("git/git_status", "git", "backend_failed")
    assert unavailable.result["structuredContent"]["fix"].endswith(", or ask again")


def test_a_server_whose_variable_is_unset_now_is_not_worth_a_retry(tmp_path, monkeypatch):
    """A backend that cannot start as configured (its `${VAR}` was set at crawl, unset for serve)
    fails with which variable and where to set it, never "try again": a retry fails the same way."""
    from conftest import raw, write_config

    cfg = write_config(tmp_path / "c.json", {"r": raw("ok", env={"TOK": "${TOOLIDX_TEST_UNSET_LATER}"})})
    monkeypatch.setenv("TOOLIDX_TEST_UNSET_LATER", "value-at-crawl")
    db = tmp_path / "c.db"
    assert crawl(cfg, db).code == 0
    monkeypatch.delenv("TOOLIDX_TEST_UNSET_LATER")
    disc = Discovery(str(db))
    source = SpecSource(server_row=lambda n: get_server(disc.db, n), db_path=str(db), trust_index=True)
    from toolidx.catalog.examples import generated_arguments
    from toolidx.store.tools import get_tool

    tool = get_tool(disc.db, disc.db.conn.execute("SELECT id FROM tools").fetchone()[0])

    async def run() -> CallOutcome:
        async with BackendPool(source) as pool:
            args = generated_arguments(tool)
            return await call_tool(disc, pool, tool["id"], args, 5.0, alternative="ask again")

    out = anyio.run(run)
    said = out.result["structuredContent"]
    assert out.outcome == "backend_failed" and "TOOLIDX_TEST_UNSET_LATER" in said["error"] + said.get("message", "")
    assert "retries fail alike" in said["fix"] and not said["fix"].startswith("try again")


def test_serves_examples_read_the_tools_text_as_describe_does(tmp_path):
    """describe_tool (schema detail) and an invalid_arguments answer give the example the CLI's
    describe gives: a workbook's `path` ends in .xlsx, not .txt."""
    from conftest import discovery_over

    from toolidx.serve.answers import describe_tool

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    tool = {"name": "read_sheet", "description": "Read the rows of an Excel workbook.", "inputSchema": schema}
    disc = discovery_over(tmp_path, {"tools": [tool]})
    described = describe_tool(disc, {"tool_name": "time/read_sheet"}).payload
    refused = disc.invalid_arguments(disc.tool("time/read_sheet"), []).payload
    assert described["example_arguments"]["path"].endswith(".xlsx")
    assert refused["example_arguments"]["path"].endswith(".xlsx")
