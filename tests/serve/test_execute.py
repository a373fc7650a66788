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
