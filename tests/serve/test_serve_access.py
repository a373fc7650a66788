"""serve --http's address and token parsing (access.py): no server, no network."""

from __future__ import annotations

import pytest

from toolidx.core.errors import UsageError
from toolidx.core.filters import Filters
from toolidx.serve.access import is_loopback, load_tokens, parse_address

TOKEN = "a-token-of-enough-length-0123"


@pytest.mark.parametrize(
    "text, want",
    [
        ("8765", ("127.0.0.1", 8765)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
        ("[::1]:9000", ("::1", 9000)),
        ("localhost:0", ("localhost", 0)),
    ],
)
def test_addresses(text, want):
    assert parse_address(text) == want


@pytest.mark.parametrize("text", ["", "x", ":80", "host:", "1:2:3", "[::1]9000", "70000", "a b:80", "-1"])
def test_bad_addresses(text):
    with pytest.raises(UsageError, match="not a \\[HOST:\\]PORT"):
        parse_address(text)


def test_loopback():
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.2", "example.org"]))


def test_token_file_scopes_and_matching(tmp_path):
    f = tmp_path / "tokens"
    f.write_text(
        f"# comment\n\n{TOKEN}\n{TOKEN}-git servers=git,github tags=vcs read-only\n{TOKEN}-cat   categories=search\n"
    )
    tokens = load_tokens("TEAM", f, environ={"TEAM": f" {TOKEN}-env \n"})
    assert len(tokens) == 4
    assert tokens.match(f"{TOKEN}-env").label == "env:TEAM"
    assert tokens.match(TOKEN).label == "file:tokens:3" and tokens.match(TOKEN).scope.is_empty()
    git = tokens.match(f"{TOKEN}-git")
    assert git.label == "file:tokens:4"
    assert git.scope == Filters(servers=["git", "github"], tags=["vcs"], read_only=True)
    assert tokens.match(f"{TOKEN}-cat").scope == Filters(categories=["search"])
    assert tokens.match("nope") is None and tokens.match(TOKEN[:-1]) is None and tokens.match("") is None
    assert not any(g.admin for g in tokens.grants)  # no token may approve unless marked admin


def test_admin_marks_a_token_that_may_approve(tmp_path):
    f = tmp_path / "tokens"
    f.write_text(f"{TOKEN} admin\n{TOKEN}-git servers=git admin\n{TOKEN}-ro\n")
    tokens = load_tokens("TEAM", f, environ={"TEAM": f"{TOKEN}-env"})
    admin, git, ro, env = (tokens.match(t) for t in (TOKEN, f"{TOKEN}-git", f"{TOKEN}-ro", f"{TOKEN}-env"))
    assert admin.admin and admin.scope.is_empty()  # `admin` is no scope: it sees everything
    assert git.admin and git.scope == Filters(servers=["git"])
    assert not ro.admin and not env.admin  # --token-env's token can never approve


@pytest.mark.parametrize(
    "text, want",
    [
        ("", "holds no token"),
        ("# only\n", "holds no token"),
        ("short\n", "line 1: a token must be 16"),
        (f"{TOKEN} servers=\n", "line 1: unknown scope"),
        (f"\n{TOKEN} superuser\n", "line 2: unknown scope"),
    ],
)
def test_bad_token_files(tmp_path, text, want):
    f = tmp_path / "t"
    f.write_text(text)
    with pytest.raises(UsageError, match=want) as e:
        load_tokens(None, f)
    assert TOKEN not in str(e.value)


def test_token_env_must_be_set():
    with pytest.raises(UsageError, match="not set or empty"):
        load_tokens("MISSING", None, environ={})
    with pytest.raises(UsageError, match="16 or more"):
        load_tokens("SHORT", None, environ={"SHORT": "abc"})


def test_a_token_scope_narrows_the_server_scope():
    server = Filters(servers=["git", "time"], read_only=False)
    assert Filters(servers=["git"]).narrowed_by(server).servers == ["git"]
    outside = Filters(servers=["memory"]).narrowed_by(server)
    assert outside.nothing and outside.servers == ["git", "time"]  # matches nothing, and never wider
    assert Filters(read_only=True).narrowed_by(server).servers == ["git", "time"]
    # a scope's text filter stays when the request names none (it was dropped: wider than the scope)
    assert Filters(servers=["git"]).narrowed_by(Filters(description_contains="log")).description_contains == "log"
    # a scope's text filter is never replaced by the request's: that widened it (any name for '.*')
    scoped = Filters(name_pattern="^git_", description_contains="log")
    assert Filters(name_pattern="^git_").narrowed_by(scoped).name_pattern == "^git_"
    for unset in (Filters(), Filters(description_contains="")):
        assert (unset.narrowed_by(scoped).name_pattern, unset.narrowed_by(scoped).description_contains) == (
            "^git_",
            "log",
        )
    with pytest.raises(UsageError, match="name_pattern is fixed by this scope"):
        Filters(name_pattern=".*").narrowed_by(Filters(name_pattern="^git_"))
    with pytest.raises(UsageError, match="description_contains is fixed"):
        Filters(description_contains="x").narrowed_by(scoped)


def test_a_token_scope_keeps_the_servers_quarantine():
    assert Filters(servers=["git"]).narrowed_by(Filters(approved_only=True)).approved_only
