"""The command line: parse, call one library function, hand the result to `render`.

Errors become one line and an exit code in `main()` (0 ok, 1 a failure was found, 2 usage).
Heavy modules (mcp, fastembed, numpy) are imported inside commands, never at import time.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, List, Optional

import typer
from typer.core import TyperCommand

from ..core.errors import EXIT_FAILURE, EXIT_USAGE, ToolidxError, UsageError
from . import render


def _doc(key: str) -> str:
    """Search's parameter `key` as --help says it: written once for every front-end."""
    from ..search.request import CLI, PARAM

    return PARAM[key].help(CLI)


# An option's value named as click and man pages name it (typer >= 0.28 writes `<int range>`, `<str>`)
_METAVARS = {
    "int": "INTEGER",
    "int range": "INTEGER",
    "float": "FLOAT",
    "float range": "FLOAT",
    "path": "PATH",
    "str": "TEXT",
}


class _Command(TyperCommand):
    """Arguments named in capitals, as click and man pages do: `search [OPTIONS] QUERY`,
    `diff [OPTIONS] [FILES]...` (typer >= 0.2x writes `{query}` and `[files]...`), and options' values
    likewise: `--limit INTEGER`, not `--limit <int range>`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for p in self.params:
            if p.metavar is not None:
                continue
            if p.param_type_name == "argument":
                p.metavar = (p.name or "").upper()  # the help's "Arguments:" list
            elif not getattr(p, "is_flag", False) and p.type.name in _METAVARS:
                p.metavar = _METAVARS[p.type.name]

    def collect_usage_pieces(self, ctx: Any) -> list[str]:  # typer's click, vendored or not
        pieces = [self.options_metavar] if self.options_metavar else []
        for p in self.get_params(ctx):
            if p.param_type_name == "argument":
                name = (p.metavar or "") if p.required else f"[{p.metavar}]"
                pieces.append(name + ("..." if p.nargs != 1 else ""))
        return pieces


class _Typer(typer.Typer):
    def command(self, name: Optional[str] = None, *, cls: Optional[type[TyperCommand]] = None, **kwargs: Any) -> Any:
        return super().command(name, cls=cls or _Command, **kwargs)


app = _Typer(
    name="toolidx",
    help=(
        "One index of every MCP tool, in a local SQLite file or in PostgreSQL: crawl servers, search tools, "
        "diff crawls, serve."
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_PathBase: Any = type(Path())


class _DbUrl(_PathBase):
    """A postgresql:// --db through options typed Path: typer turns every other value into a
    Path, which folds the URL's `//`; str() and os.fspath() give the URL as written."""

    url = ""

    def __str__(self) -> str:
        return self.url

    def __fspath__(self) -> str:
        return self.url


def _db_target(value: str) -> Path:
    from ..store.urls import is_pg_url

    if not is_pg_url(value):
        return Path(value)
    target = _DbUrl(".")
    target.url = value
    return target


DbOpt = typer.Option(
    None,
    "--db",
    envvar="TOOLIDX_DB",
    show_envvar=True,
    parser=_db_target,
    metavar="PATH|URL",
    help="Index file (default: ~/.local/share/toolidx/tools.db), or a postgresql:// URL (docs/deploy.md).",
)
JsonOpt = typer.Option(False, "--json", help="Print versioned JSON instead of a table.")
ModelOpt = typer.Option(
    None, "--model", help="Embedding model name (default: the index's model, else toolidx's own; 'none' disables)."
)
ModelPathOpt = typer.Option(None, "--model-path", help="Local model directory (air-gapped; env TOOLIDX_MODEL_PATH).")


_opened: list = []


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        sys.stdout.write(f"toolidx {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _app(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print toolidx's version and exit."
    ),
) -> None:
    """One index of every MCP tool, in a local SQLite file or in PostgreSQL: crawl servers, search
    tools, diff crawls, serve."""


def _open(db: Optional[Path], create: bool = False):
    from ..store.db import open_db

    database = open_db(db, create=create)
    _opened.append(database)  # closed by main() when the command ends
    return database


def _new_index_file(db: Optional[Path]) -> Optional[Path]:
    """The index file a crawl is about to make (None: one is there, or the index is a PostgreSQL
    catalog): a first crawl stopped by Ctrl-C removes it again instead of leaving an empty index."""
    from ..store.db import default_db_path
    from ..store.urls import is_pg_url

    target = os.fspath(db) if db is not None else os.environ.get("TOOLIDX_DB", "")
    if is_pg_url(target) or target == ":memory:":
        return None
    p = Path(target).expanduser() if target else default_db_path()
    return None if p.exists() or p.is_symlink() else p


# --- crawl / embed -----------------------------------------------------------------------------
@app.command()
def crawl(
    config: Optional[Path] = typer.Option(
        None,
        "--config",
        "-c",
        envvar="TOOLIDX_CONFIG",
        help="mcpServers config (JSON or YAML; Claude Desktop, Cursor, VS Code files work as is). "
        "Default: the config the index was crawled from.",
    ),
    from_clients: Optional[str] = typer.Option(
        None,
        "--from",
        help="Crawl the servers these clients use, from their usual config files: "
        "claude-desktop,claude-code,cursor,vscode or all (instead of --config). The folder's own "
        "files (.mcp.json, .cursor/mcp.json, .vscode/mcp.json) are skipped unless named by --trust-folder-config.",
    ),
    trust_folder: List[Path] = typer.Option(
        [],
        "--trust-folder-config",
        metavar="PATH",
        help="With --from: also crawl this file of the current folder (.mcp.json, .cursor/mcp.json, "
        ".vscode/mcp.json), which --from skips; for this run only, and it may not read your environment.",
    ),
    db: Optional[Path] = DbOpt,
    server: List[str] = typer.Option([], "--server", "-s", help="Crawl only these servers (others are kept)."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, help="Servers at once (default 4)."),
    model: Optional[str] = ModelOpt,
    model_path: Optional[Path] = ModelPathOpt,
    prune_other_configs: bool = typer.Option(
        False,
        "--prune-other-configs",
        help="Also remove servers that other configs crawled into this index (a crawl removes only "
        "its own config's servers); each one removed is named.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Connect to every configured MCP server and index its tools. Exit 1 if any server failed."""
    from ..core.embedding import LazyEmbedder, resolve_model
    from ..core.errors import UsageError
    from ..crawl.client_configs import ClientConfigs, parse_clients
    from ..crawl.client_configs import from_clients as find_client_servers
    from ..crawl.config import load_config
    from ..crawl.run import check_prune, recorded_config, run_crawl

    if from_clients is not None and config is not None:
        raise UsageError("--from and --config name two sets of servers", fix="give one of them")
    if trust_folder and from_clients is None:
        raise UsageError(
            "--trust-folder-config goes with --from", fix=f"add --from all, or pass --config {trust_folder[0]}"
        )
    only = list(server) or None
    check_prune(only, prune_other_configs)
    database = None
    found: Optional[ClientConfigs] = None
    if from_clients is None and config is None:  # a re-crawl: the config (or --from) the index recorded
        database = _open(db)
        recorded = recorded_config(database, only)
        if recorded.startswith("--from "):
            from_clients = recorded.removeprefix("--from ")
            render.crawl_config(recorded)
        else:
            config = Path(recorded)
            render.crawl_config(str(config))
    if from_clients is not None:
        found = find_client_servers(parse_clients(from_clients), trust_folder=list(trust_folder))
        render.client_configs(found)
        cfg = found.config
    else:
        assert config is not None
        cfg = load_config(config)
    cfg.enabled_servers(only)  # unknown --server names fail before the index is touched
    new_file = _new_index_file(db) if database is None else None
    database = database or _open(db, create=True)
    choice = resolve_model(
        model,
        str(model_path) if model_path else None,
        cfg.settings,
        indexed=database.get_meta("embed_model"),
        remembered_path=database.get_meta("embed_model_path"),
    )
    # loaded only if some tool's text needs embedding: an unchanged re-crawl never pays for it
    embedder = LazyEmbedder(choice, allow_download=True) if choice.name else None
    from .progress import crawl_progress

    try:
        with crawl_progress(as_json) as progress:
            summary = run_crawl(
                cfg,
                database,
                only=only,
                concurrency=concurrency,
                embedder=embedder,
                progress=progress,
                prune_other_configs=prune_other_configs,
            )
    except KeyboardInterrupt:
        # a crawl writes in one transaction at its very end: stopped before or in it, nothing is kept
        if new_file is not None:  # and the file it made for a first crawl goes too
            from ..core.files import remove_database_files

            database.close()
            remove_database_files(new_file)
            render.note(f"interrupted: nothing written, no index made ({new_file} removed)")
        else:
            render.note("interrupted: nothing written, the index is as before")
        raise typer.Exit(130) from None
    from ..store.urls import is_pg_url

    where = database.path if is_pg_url(database.path) else os.path.abspath(database.path)
    render.crawl_summary(summary, as_json, sources=found.to_json() if found else None, index=where)
    if summary.servers_failed:
        raise typer.Exit(EXIT_FAILURE)


@app.command()
def embed(
    db: Optional[Path] = DbOpt,
    model: Optional[str] = ModelOpt,
    model_path: Optional[Path] = ModelPathOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Fill in missing or outdated embeddings (after an offline first crawl, or a model change)."""
    from ..crawl.run import embed as embed_index
    from .progress import step_progress

    try:
        with step_progress(as_json, "embed") as progress:
            result = embed_index(_open(db), model, str(model_path) if model_path else None, progress)
    except KeyboardInterrupt:  # the vectors are written in one transaction after the last is computed
        render.note("interrupted: nothing written, the index is as before")
        raise typer.Exit(130) from None
    render.embed_result(result, as_json)


@app.command()
def merge(
    inputs: List[Path] = typer.Argument(
        ...,
        parser=_db_target,
        help="Index files to merge (e.g. shards of a config crawled apart), or postgresql:// URLs.",
    ),
    output: Path = typer.Option(
        ...,
        "--output",
        "-o",
        parser=_db_target,
        metavar="PATH|URL",
        help="The merged index (a new file, or an index it replaces whole; never an input), or a postgresql:// URL.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Merge index files into one: tools, servers, crawl history and vectors (copied, when the models
    match). A server in several inputs comes from the one that crawled it last (reported). Exit 2,
    with nothing written, when the inputs' models differ or OUT is an input."""
    from ..crawl.combine import merge_indexes

    render.merge_result(merge_indexes(list(inputs), output), as_json)


# --- catalog: describe / list / categories / similar -------------------------------------------
FILTER_OPTIONS: Any = object()  # where `_filter_options` puts the filter options in a command's signature
_SHORT = {"servers": "-s", "tags": "-t"}  # the CLI's own short flags


def _filter_options(*, has_examples: bool = True) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Search's filter parameters (search.request.PARAMS, each written once for every front-end) as
    options of a command, in the table's order, where the command names a parameter
    `filters: Any = FILTER_OPTIONS` (an option group shared by decorator, as sqlite-utils does). The
    command receives their values in `filters`, a dict keyed as `Filters` names them, for
    `_catalog_filters`."""
    import functools
    import inspect
    import typing

    from ..search.request import CLI, PARAMS

    def option(p: Any) -> inspect.Parameter:
        flags = (p.names[CLI], *([_SHORT[p.key]] if p.key in _SHORT else []))
        kind: Any
        default: Any
        if p.many:
            kind, default = List[str], []
        elif p.schema["type"] == "boolean":
            kind, default = bool, False
        else:
            kind, default = Optional[str], None
        info = typer.Option(default, *flags, help=p.help(CLI))
        # named as the option (`server`, not `servers`): its value's name in --help and the man page
        return inspect.Parameter(arg[p.key], inspect.Parameter.KEYWORD_ONLY, default=info, annotation=kind)

    chosen = [p for p in PARAMS if p.filter and (has_examples or p.key != "has_examples")]
    arg = {p.key: str(p.names[CLI]).lstrip("-").replace("-", "_") for p in chosen}
    group = [option(p) for p in chosen]

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(command)
        params = []
        for q in inspect.signature(command).parameters.values():
            if q.default is FILTER_OPTIONS:
                params += group
            else:
                params.append(q.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[q.name]))

        @functools.wraps(command)
        def run(**kwargs: Any) -> None:
            given = {key: kwargs.pop(name) for key, name in arg.items()}
            command(**kwargs, filters=given)

        run.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
        run.__annotations__ = {q.name: q.annotation for q in params}
        return run

    return decorate


UsageDbOpt = typer.Option(
    None,
    "--usage-db",
    envvar="TOOLIDX_USAGE_DB",
    show_envvar=True,
    help="Usage file (default: INDEX.usage.db, or under $XDG_STATE_HOME/toolidx/usage "
    "when the index's folder is read-only; with a postgresql:// --db, the catalog's own tables).",
)
MaxTokensOpt = typer.Option(
    None,
    "--max-tokens",
    min=1,
    help="Fit the answer in about this many tokens: shorten descriptions, "
    "then drop schemas, then drop items (JSON says what was cut).",
)


def _catalog_filters(values: dict[str, Any], *, database=None, usage_db: Optional[Path] = None):
    """The filter options' values (`_filter_options`) as Filters, built as every front-end builds them
    (search.request.filters_of); None when none is set. --has-examples also reads the usage file,
    whose recorded examples count (so it needs `database`)."""
    from ..search.request import CLI, filters_of

    f = dict(values)
    if f.get("has_examples"):
        from ..catalog.examples import example_tool_ids

        f["example_ids"] = example_tool_ids(database, _usage(database, usage_db))
    built = filters_of({k: list(v) if isinstance(v, list | tuple) else v for k, v in f.items()}, CLI)
    return None if built.is_empty() else built


def _usage(database, usage_db: Optional[Path]):
    """The index's usage for reading: its usage file, or a catalog in PostgreSQL's own tables (None
    when nothing was recorded yet, or when it is unusable: then one warning line, and the command
    goes on without it)."""
    from ..core.errors import UsageError
    from ..store.usage import catalog_usage

    try:
        store = catalog_usage(database, usage_db)
    except UsageError:  # a bad --usage-db (a FIFO, a URL) is the caller's mistake: exit 2
        raise
    except ToolidxError as e:
        render.warning(f"usage metrics unavailable: {e}")
        return None
    if store is not None:
        _opened.append(store)
    return store


@app.command()
def describe(
    tool: str = typer.Argument(..., help="SERVER/TOOL (also SERVER.TOOL, SERVER:TOOL, or a bare tool name)."),
    detail: str = typer.Option(
        "schema", "--detail", "-d", help="schema (the parameter table) | summary (without it) | full."
    ),
    metrics: bool = typer.Option(
        False,
        "--metrics",
        help="Add usage metrics: calls, success rate, p50/p95 duration, last used (from toolidx serve).",
    ),
    examples: bool = typer.Option(False, "--examples", help="Add usage examples (always at --detail full)."),
    db: Optional[Path] = DbOpt,
    usage_db: Optional[Path] = UsageDbOpt,
    max_tokens: Optional[int] = MaxTokensOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Show one tool and its parameters; --detail summary leaves them out, --detail full adds an example call."""
    from ..catalog.describe import describe as describe_tool

    database = _open(db)
    examples = examples or detail == "full"
    store = _usage(database, usage_db) if metrics or examples else None
    render.describe_result(
        describe_tool(database, tool, detail, usage=store, metrics=metrics, examples=examples), as_json, max_tokens
    )


@app.command("list")
@_filter_options()
def list_cmd(
    db: Optional[Path] = DbOpt,
    page: int = typer.Option(1, "--page", min=1, help="Page number (from 1)."),
    page_size: int = typer.Option(50, "--page-size", min=1, max=1000, help="Tools per page."),
    sort: str = typer.Option(
        "name",
        "--sort",
        help="name | server | category | calls | success | recent "
        "(then id; the usage sorts rank by toolidx serve's calls).",
    ),
    order: Optional[str] = typer.Option(None, "--order", help="asc | desc (default: asc; desc for the usage sorts)."),
    filters: Any = FILTER_OPTIONS,
    usage_db: Optional[Path] = UsageDbOpt,
    max_tokens: Optional[int] = MaxTokensOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List indexed tools, a page at a time, with the same filters as search."""
    from ..catalog.listing import USAGE_SORTS, list_tools

    database = _open(db)
    filters = _catalog_filters(filters, database=database, usage_db=usage_db)
    store = _usage(database, usage_db) if sort in USAGE_SORTS else None
    render.list_result(
        list_tools(database, page=page, page_size=page_size, sort=sort, order=order, filters=filters, usage=store),
        as_json,
        max_tokens,
    )


@app.command()
@_filter_options()
def categories(
    db: Optional[Path] = DbOpt,
    filters: Any = FILTER_OPTIONS,
    usage_db: Optional[Path] = UsageDbOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Categories, tags and servers (with crawl status and stale tools), each with its tool count."""
    from ..catalog.listing import categories as catalog_categories

    database = _open(db)
    filters = _catalog_filters(filters, database=database, usage_db=usage_db)
    render.categories_result(catalog_categories(database, filters), as_json)


@app.command()
def similar(
    tool: str = typer.Argument(..., help="SERVER/TOOL to find neighbours of."),
    db: Optional[Path] = DbOpt,
    limit: int = typer.Option(10, "--limit", "-n", min=1, max=200, help="How many similar tools."),
    max_tokens: Optional[int] = MaxTokensOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Tools most like one tool (by stored embedding; by words without vectors), flagging likely duplicates
    across servers."""
    from ..catalog.similar import similar as similar_tools

    render.similar_result(similar_tools(_open(db), tool, limit), as_json, max_tokens)


@app.command()
def approve(
    tools: Optional[List[str]] = typer.Argument(None, help="SERVER/TOOL ids to approve (or revoke)."),
    server: List[str] = typer.Option([], "--server", "-s", help="Every tool of these servers (repeatable)."),
    all_tools: bool = typer.Option(False, "--all", help="Every tool in the index."),
    revoke: bool = typer.Option(False, "--revoke", help="Withdraw the approval instead."),
    db: Optional[Path] = DbOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Approve tools' current definitions for `serve --quarantine` (recorded with who and when; kept
    across re-crawls). An unknown id fails with the closest ids (exit 2) and nothing is written."""
    from ..catalog.approvals import approve as run_approve

    render.approve_result(
        run_approve(_open(db), list(tools or []), servers=list(server), everything=all_tools, revoke=revoke), as_json
    )


# --- serve / stats -----------------------------------------------------------------------------
@app.command()
def serve(
    db: Optional[Path] = DbOpt,
    config: Optional[Path] = typer.Option(
        None,
        "--config",
        "-c",
        envvar="TOOLIDX_CONFIG",
        help="Config to start servers from for execute_tool (default: the one the index was crawled from).",
    ),
    server: List[str] = typer.Option(
        [], "--server", "-s", help="Scope: only these servers' tools can be found and run."
    ),
    tag: List[str] = typer.Option([], "--tag", "-t", help="Scope: only tools with any of these tags."),
    category: List[str] = typer.Option([], "--category", help="Scope: only these categories."),
    read_only: bool = typer.Option(False, "--read-only", help="Scope: only tools annotated read-only."),
    expose_tools: bool = typer.Option(
        False, "--expose-tools", help="Also list every tool in scope directly, as SERVER__TOOL (proxied)."
    ),
    pin: List[str] = typer.Option([], "--pin", help="SERVER/TOOL always listed directly (repeatable)."),
    quarantine: bool = typer.Option(
        False,
        "--quarantine",
        help="Hide tools no one approved (toolidx approve) and refuse to run a "
        "tool whose definition changed since its approval.",
    ),
    always_load: bool = typer.Option(
        True,
        "--always-load/--no-always-load",
        help="Mark search_tools, describe_tool and execute_tool "
        "_meta anthropic/alwaysLoad, so clients that defer MCP tools "
        "(Claude Code) load them on the first turn.",
    ),
    max_tokens: int = typer.Option(4000, "--max-tokens", min=200, help="Token budget of each meta-tool answer."),
    poll: float = typer.Option(1.0, "--poll", min=0.05, help="Seconds between checks for a new crawl."),
    usage_db: Optional[Path] = UsageDbOpt,
    record_examples: bool = typer.Option(
        False,
        "--record-examples",
        help="Keep successful calls' arguments as usage examples (secret-looking values redacted), "
        "in the usage file (a postgresql:// catalog: its own tables).",
    ),
    trust_index: bool = typer.Option(
        False,
        "--trust-index",
        help="Start servers from the index's own launch lines (command, args, "
        "env, url) though no crawl on this machine wrote them (a merged "
        "or downloaded index): only for an index you have read.",
    ),
    no_learn: bool = typer.Option(
        False,
        "--no-learn",
        envvar="TOOLIDX_NO_LEARN",
        help="Do not learn from usage: record no search-and-call pairs and lift no tool by them "
        "(env TOOLIDX_NO_LEARN=1).",
    ),
    print_config: bool = typer.Option(
        False,
        "--print-config",
        help="Print the client config entry that starts this server (with --http: that connects to it), and exit.",
    ),
    client: str = typer.Option(
        "claude", "--client", help="With --print-config: claude | claude-code | codex | cursor | vscode."
    ),
    http: Optional[str] = typer.Option(
        None,
        "--http",
        metavar="[HOST:]PORT",
        help="Serve MCP Streamable HTTP (/mcp) and the search API (/v1/search) "
        "to many clients, instead of stdio (a bare port listens on 127.0.0.1).",
    ),
    token_env: Optional[str] = typer.Option(
        None, "--token-env", metavar="NAME", help="With --http: a bearer token from this environment variable."
    ),
    token_file: Optional[Path] = typer.Option(
        None,
        "--token-file",
        metavar="PATH",
        help="With --http: bearer tokens, one a line, each with an optional "
        "scope (TOKEN servers=a,b tags=x read-only).",
    ),
    tls_cert: Optional[Path] = typer.Option(
        None,
        "--tls-cert",
        metavar="PEM",
        help="With --http: serve HTTPS with this certificate (chain), with --tls-key.",
    ),
    tls_key: Optional[Path] = typer.Option(
        None, "--tls-key", metavar="PEM", help="With --http: the certificate's private key (unencrypted PEM)."
    ),
    allow_host: List[str] = typer.Option(
        [],
        "--allow-host",
        metavar="NAME",
        help="With --http: also answer requests whose Host is NAME (a DNS name "
        "or proxy in front of serve; repeatable). Others get 421.",
    ),
    allow_origin: List[str] = typer.Option(
        [],
        "--allow-origin",
        metavar="ORIGIN",
        help="With --http: also answer browser requests from ORIGIN "
        "(https://app.example:8443; repeatable). Others get 403.",
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="With --print-config: the entry inside toolidx's versioned JSON (with where "
        "it goes and the variables it needs). Errors as JSON too.",
    ),
) -> None:
    """Serve the index as an MCP server (stdio, or Streamable HTTP with --http): search/describe/execute
    meta-tools for any client."""
    from ..core.errors import UsageError
    from ..core.filters import Filters

    scope = Filters(
        servers=list(server), tags=list(tag), categories=list(category), read_only=read_only, approved_only=quarantine
    )
    if print_config:
        entry = dict(
            config_path=str(config) if config else None,
            servers=list(server),
            tags=list(tag),
            categories=list(category),
            read_only=read_only,
            expose_tools=expose_tools,
            pins=list(pin),
            max_tokens=max_tokens if max_tokens != 4000 else None,
            always_load=always_load,
            quarantine=quarantine,
            usage_db=str(usage_db) if usage_db else None,
            record_examples=record_examples,
            trust_index=trust_index,
        )
        render.serve_config(
            _client_entry(db, client, http, entry, tls=bool(tls_cert), token=bool(token_env or token_file)), as_json
        )
        return
    from ..store.db import default_db_path

    options = dict(
        config_path=str(config) if config else None,
        scope=scope,
        expose_tools=expose_tools,
        pins=list(pin),
        max_tokens=max_tokens,
        poll_interval=poll,
        always_load=always_load,
        usage_db=str(usage_db) if usage_db else None,
        record_examples=record_examples,
        trust_index=trust_index,
        learn=not no_learn,
    )
    db_path = str(db or default_db_path())
    if http is None:
        if token_env or token_file or tls_cert or tls_key or allow_host or allow_origin:
            raise UsageError(
                "--token-env / --token-file / --tls-cert / --tls-key / --allow-host / --allow-origin need --http",
                fix="add --http [HOST:]PORT, or drop them",
            )
        from ..serve.stdio import serve_stdio

        serve_stdio(db_path, **options)
        return
    _serve_http(db_path, http, token_env, token_file, tls_cert, tls_key, allow_host, allow_origin, options)


def _client_entry(db: Optional[Path], client: str, http: Optional[str], entry: dict, *, tls: bool, token: bool) -> Any:
    """serve --print-config: the client's entry that starts this serve over stdio (`entry`: its
    options), or with --http the one that connects to a running serve --http."""
    if http is not None:
        from ..serve.access import is_loopback, parse_address
        from .clients import http_client_config

        host, port = parse_address(http)
        return http_client_config(client, host, port, tls=tls, token=token or not is_loopback(host))
    from ..core.servers import launch_vars
    from ..store.db import default_db_path
    from ..store.tools import list_servers
    from .clients import client_config

    database = _open(db)
    scoped = set(entry.get("servers") or [])
    servers = [s for s in list_servers(database) if not scoped or s["name"] in scoped]
    index_vars = {v for s in servers for v in launch_vars(s.get("connect"))}
    return client_config(
        client,
        str(db or default_db_path()),
        index_config_path=database.get_meta("config_path"),
        index_vars=sorted(index_vars),
        **entry,
    )


def _serve_http(
    db_path: str,
    http: str,
    token_env: Optional[str],
    token_file: Optional[Path],
    tls_cert: Optional[Path],
    tls_key: Optional[Path],
    allow_host: List[str],
    allow_origin: List[str],
    options: dict,
) -> None:
    """serve --http: its address, tokens and TLS checked, then serve_http until stopped."""
    from ..core.errors import UsageError
    from ..serve.access import load_tokens, parse_address
    from ..serve.http import serve_http

    address = parse_address(http)
    tokens = load_tokens(token_env, token_file)
    if bool(tls_cert) != bool(tls_key):
        raise UsageError("--tls-cert and --tls-key go together", fix="give both PEM files, or neither")
    tls = (str(tls_cert), str(tls_key)) if tls_cert and tls_key else None
    serve_http(
        db_path, address, tokens, tls=tls, allow_hosts=tuple(allow_host), allow_origins=tuple(allow_origin), **options
    )


@app.command()
def ui(
    db: Optional[Path] = DbOpt,
    port: int = typer.Option(0, "--port", "-p", min=0, max=65535, help="Port on 127.0.0.1 (default: any free one)."),
    open_browser: bool = typer.Option(True, "--open/--no-open", help="Open the link in the default browser."),
    usage_db: Optional[Path] = UsageDbOpt,
    as_json: bool = typer.Option(False, "--json", help="Print the link as toolidx's versioned JSON."),
) -> None:
    """Open the web console on a local index: search, tools, servers, changes, quarantine (approve),
    usage. Loopback only, behind a one-time link (printed, and opened unless --no-open). Runs
    until Ctrl-C. Exit 2: no index, or the port is in use."""
    from ..catalog.approvals import approver
    from ..serve.console.app import local_access, open_privately
    from ..serve.http import serve_http
    from ..store.db import default_db_path

    tokens, sessions, once = local_access(approver())
    cleanups: List[Any] = []

    def ready(base: str) -> None:
        link = f"{base}/login?once={once}"
        render.ui_link(link, as_json)
        if open_browser:  # never with the link on the browser's command line: any user can read it
            cleanups.append(open_privately(link))

    try:
        serve_http(
            str(db or default_db_path()),
            ("127.0.0.1", port),
            tokens,
            sessions=sessions,
            announce=ready,
            usage_db=str(usage_db) if usage_db else None,
        )
    finally:
        for cleanup in cleanups:
            cleanup()


@app.command()
def check(
    require: List[str] = typer.Option(
        [], "--require", "-r", help="SERVER/TOOL that must be callable (repeatable, or comma-separated)."
    ),
    db: Optional[Path] = DbOpt,
    config: Optional[Path] = typer.Option(
        None,
        "--config",
        "-c",
        envvar="TOOLIDX_CONFIG",
        help="Config to start servers from (default: the one the index "
        "was crawled from), as serve's execute_tool would.",
    ),
    server: List[str] = typer.Option([], "--server", "-s", help="Scope, as serve's: only these servers."),
    tag: List[str] = typer.Option([], "--tag", "-t", help="Scope: only tools with any of these tags."),
    category: List[str] = typer.Option([], "--category", help="Scope: only these categories."),
    read_only: bool = typer.Option(False, "--read-only", help="Scope: only tools annotated read-only."),
    quarantine: bool = typer.Option(False, "--quarantine", help="As serve --quarantine: a tool must be approved."),
    trust_index: bool = typer.Option(
        False,
        "--trust-index",
        help="As serve --trust-index: start servers from the index's own launch "
        "lines though no crawl on this machine wrote them.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Preflight: for each required tool, is it indexed, in scope, approved (with --quarantine), and
    does its server start and still list it unchanged? Exit 1 when any is not callable."""
    from ..core.filters import Filters
    from ..serve.preflight import check as run_check
    from ..store.db import default_db_path

    scope = Filters(
        servers=list(server), tags=list(tag), categories=list(category), read_only=read_only, approved_only=quarantine
    )
    report = run_check(
        str(db or default_db_path()),
        list(require),
        scope=scope,
        config_path=str(config) if config else None,
        trust_index=trust_index,
    )
    render.check_result(report, as_json)
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)


@app.command()
def stats(
    db: Optional[Path] = DbOpt,
    server: List[str] = typer.Option([], "--server", "-s", help="Only these servers."),
    usage: bool = typer.Option(
        False, "--usage", help="Also usage per tool and per server: calls, success rate, p50/p95 duration, last used."
    ),
    usage_db: Optional[Path] = UsageDbOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Context tokens: every tool definition versus toolidx serve's meta-tools, per server."""
    from ..core.filters import Filters
    from ..serve.stats import index_stats

    database = _open(db)
    filters = Filters(servers=list(server)) if server else None
    report = None
    if usage:
        from ..catalog.metrics import usage_report
        from ..store.usage import shown, usage_path

        report = usage_report(database, _usage(database, usage_db), filters, shown(usage_path(database.path, usage_db)))
    render.stats_result(index_stats(database, filters, report), as_json)


@app.command()
def forget(
    db: Optional[Path] = DbOpt,
    tool: Optional[str] = typer.Option(None, "--tool", metavar="ID", help="Forget what was learned for this tool."),
    token: Optional[str] = typer.Option(
        None,
        "--token",
        metavar="LABEL",
        help="Forget what this token's callers taught (an empty label: stdio and no-token callers).",
    ),
    everything: bool = typer.Option(False, "--all", help="Forget everything learned from usage."),
    usage_db: Optional[Path] = UsageDbOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Delete what serve learned from usage (search-and-call pairs): all, one tool's, one token's."""
    from ..core.errors import UsageError
    from ..store.usage import shown, usage_path

    if not everything and tool is None and token is None:
        raise UsageError(
            "forget what? nothing named", fix="add --tool ID, --token LABEL (both: that token's for that tool) or --all"
        )
    if everything and (tool is not None or token is not None):
        raise UsageError("--all forgets everything: drop --tool / --token, or --all")
    database = _open(db)
    store = _usage(database, usage_db)
    n = store.forget_pairs(tool_id=tool, token=token) if store is not None else 0
    render.forget_result(n, tool, token, shown(usage_path(database.path, usage_db)), as_json)


@app.command()
@_filter_options(has_examples=False)
def export(
    fmt: str = typer.Option(
        ...,
        "--format",
        "-f",
        help="anthropic | openai (a model API's deferred tool list), openapi (an OpenAPI "
        "3.1 document), python | typescript (typed wrapper modules).",
    ),
    db: Optional[Path] = DbOpt,
    filters: Any = FILTER_OPTIONS,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Wrap the output in toolidx's versioned JSON (format, count, and the tool "
        "list, document or code) instead of writing it bare.",
    ),
) -> None:
    """Write the tools in scope as a model API's deferred tool list (anthropic, openai), an OpenAPI
    3.1 document (openapi), or typed wrappers that run them through toolidx (python, typescript)."""
    from ..integrations.export import export_tools
    from ..store.db import default_db_path

    render.export_result(export_tools(db or default_db_path(), fmt, _catalog_filters(filters)), as_json, output)


@app.command()
def doctor(
    db: Optional[Path] = DbOpt,
    config: Optional[Path] = typer.Option(
        None,
        "--config",
        "-c",
        envvar="TOOLIDX_CONFIG",
        help="Config to check (default: the one the index was crawled from).",
    ),
    model: Optional[str] = ModelOpt,
    model_path: Optional[str] = ModelPathOpt,
    usage_db: Optional[Path] = UsageDbOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Check the install (SQLite, FTS5, sqlite-vec, fastembed, mcp), the index (engine: SQLite file
    or PostgreSQL and pgvector; schema, integrity, failed servers, missing vectors), its usage
    file (readable, writable), the config (each server's command, URL, tools_file, variables) and
    the model (loads, same model and dimension as the index), each with a fix. Exit 1 when
    something fails (a usage problem only warns). Starts no server and writes nothing."""
    from ..health.doctor import doctor as run_doctor
    from ..store.db import default_db_path

    report = run_doctor(
        str(db or default_db_path()),
        config_path=str(config) if config else None,
        model=model,
        model_path=model_path,
        usage_db=str(usage_db) if usage_db else None,
    )
    render.doctor_result(report, as_json)
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)


# --- diff / history / audit --------------------------------------------------------------------
FormatOpt = typer.Option("text", "--format", "-f", help="text | json | markdown (a pull-request comment).")


def _format(fmt: str, as_json: bool) -> str:
    from ..core.errors import UsageError

    f = "json" if as_json else fmt.strip().lower()
    f = {"md": "markdown", "txt": "text"}.get(f, f)
    if f not in ("text", "json", "markdown"):
        raise UsageError(f"unknown --format {fmt!r}", fix="use text, json or markdown")
    return f


@app.command()
def diff(
    files: Optional[List[Path]] = typer.Argument(
        None, help="OLD.db [NEW.db]: compare the latest crawl of each (NEW defaults to --db). None: two crawls of --db."
    ),
    db: Optional[Path] = DbOpt,
    from_crawl: Optional[str] = typer.Option(
        None, "--from", help="Older crawl: id, previous, or -N (default: the one before --to)."
    ),
    to_crawl: Optional[str] = typer.Option(None, "--to", help="Newer crawl: id, latest, or -N (default: latest)."),
    server: List[str] = typer.Option([], "--server", "-s", help="Only these servers."),
    approved: bool = typer.Option(
        False,
        "--approved",
        help="What awaits approval: tools never approved and tools changed since (toolidx approve), against --db.",
    ),
    fail_on: List[str] = typer.Option(
        ["none"],
        "--fail-on",
        help="Exit 1 when a change of this class is found: breaking, risky, "
        "compatible, any, none (default; comma-separate or repeat).",
    ),
    fmt: str = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """What changed between two crawls: added, removed, renamed and changed tools, classified
    breaking / risky / compatible. Exit 0: nothing matched --fail-on; 1: matching changes; 2: usage."""
    from ..core.errors import UsageError
    from ..diff.history import diff as run_diff
    from ..diff.snapshot import expand_fail_on

    f = _format(fmt, as_json)
    expand_fail_on(fail_on)  # a typo in the gate fails before any work
    paths = list(files or [])
    if len(paths) > 2:
        raise UsageError("at most two index files (OLD.db NEW.db)", fix="toolidx diff OLD.db NEW.db")
    if approved:
        if paths or from_crawl or to_crawl:
            raise UsageError(
                "--approved compares the approvals with the index now: no files, --from or --to",
                fix="toolidx diff --approved --db PATH",
            )
        from ..diff.approved import awaiting_approval

        result = awaiting_approval(_open(db), list(server) or None)
    else:
        result = run_diff(db, *paths, from_ref=from_crawl, to_ref=to_crawl, servers=list(server) or None)
    render.diff_result(result, f, list(fail_on))
    if result.matches(fail_on):
        raise typer.Exit(EXIT_FAILURE)


@app.command()
def history(
    db: Optional[Path] = DbOpt,
    limit: int = typer.Option(20, "--limit", "-n", min=0, help="How many crawls, newest first (0: all)."),
    server: List[str] = typer.Option([], "--server", "-s", help="Count only these servers' tools."),
    as_json: bool = JsonOpt,
) -> None:
    """The crawls in the index: servers ok/failed, tools, and added/removed/changed since the crawl before."""
    from ..diff.history import history as crawl_history

    render.history_result(crawl_history(_open(db), limit or None, list(server) or None), as_json)


@app.command()
def audit(
    db: Optional[Path] = DbOpt,
    server: List[str] = typer.Option([], "--server", "-s", help="Only these servers."),
    crawl_ref: Optional[str] = typer.Option(
        None, "--crawl", help="Scan a past crawl (id, previous, -N) instead of the index as it is now."
    ),
    fmt: str = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Scan tool descriptions and schemas for prompt-injection patterns (hidden tags, "ignore previous
    instructions", secret-file requests, invisible Unicode, base64). Exit 1 when anything is found."""
    from ..diff.history import audit as run_audit

    f = _format(fmt, as_json)
    report = run_audit(_open(db), list(server) or None, crawl_ref)
    render.audit_result(report, f)
    if report.findings:
        raise typer.Exit(EXIT_FAILURE)


# --- search / eval -----------------------------------------------------------------------------
@app.command()
@_filter_options()
def search(
    query: str = typer.Argument(..., help=_doc("query")),
    db: Optional[Path] = DbOpt,
    limit: int = typer.Option(10, "--limit", "-n", min=1, help=_doc("limit")),
    mode: str = typer.Option("hybrid", "--mode", "-m", help=_doc("mode")),
    filters: Any = FILTER_OPTIONS,
    usage_db: Optional[Path] = UsageDbOpt,
    min_score: Optional[float] = typer.Option(None, "--min-score", help=_doc("min_score")),
    max_tokens: Optional[int] = MaxTokensOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Find tools for a task: keyword + semantic + fuzzy-name ranking, scores in [0, 1]. Says so
    (no hits, exit 1) when no tool is a good match."""
    from ..search import hybrid
    from ..search.request import SearchRequest

    request = SearchRequest(query, mode, limit, min_score).check()
    database = _open(db)
    chosen = _catalog_filters(filters, database=database, usage_db=usage_db)
    if chosen is not None:
        request.filters = chosen
    result = hybrid.search(database, request)
    render.search_result(result, as_json, max_tokens)
    if result.no_match:
        raise typer.Exit(EXIT_FAILURE)


@app.command("eval")
def eval_cmd(
    queries: Path = typer.Argument(
        ...,
        help='JSONL of {"id", "query", "relevant": [tool ids]} '
        '("relevant": [] = no tool serves it; "steps": '
        '[[ids], ...] with --labels steps).',
    ),
    db: Optional[Path] = DbOpt,
    mode: str = typer.Option("all", "--mode", "-m", help="all | hybrid | keyword | semantic."),
    k: List[int] = typer.Option([1, 5, 10], "--k", help="Cut-offs for R@k (repeatable)."),
    labels: str = typer.Option(
        "any",
        "--labels",
        help="any: one relevant tool serves the query; "
        "all: it needs every one; steps: it needs "
        "every step, any alternative meets a step.",
    ),
    infeasible: Optional[Path] = typer.Option(None, "--infeasible", help="Extra JSONL of queries no tool serves."),
    by: Optional[str] = typer.Option(None, "--by", help="Also report per value of this query field (e.g. level)."),
    misses: int = typer.Option(
        0,
        "--misses",
        min=0,
        help="Also list up to N queries per mode whose relevant tool is not ranked 1st (--json has all).",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Measure retrieval quality on your catalog: R@k, MRR@10, nDCG@10, abstention, per mode; with
    several modes, a paired sign test of the first against the others; the missed queries."""
    from ..core.vocabulary import SEARCH_MODES
    from ..search.eval import evaluate

    modes = list(SEARCH_MODES) if mode == "all" else [mode]
    render.eval_report(
        evaluate(_open(db), queries, modes=modes, k=tuple(k), labels=labels, infeasible=infeasible, by=by),
        as_json,
        misses,
    )


# --- entry point -------------------------------------------------------------------------------
class _StderrHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        render.warning(record.getMessage())


def main(argv: list[str] | None = None) -> None:
    log = logging.getLogger("toolidx")
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        log.addHandler(_StderrHandler())
        log.setLevel(logging.WARNING)
        log.propagate = False
    args = sys.argv[1:] if argv is None else argv
    as_json = (
        "--json" in args
        or "--format=json" in args
        or any(a in ("--format", "-f") and b == "json" for a, b in zip(args, args[1:]))
    )
    try:  # typer >= 0.20 vendors click and raises its copy's exceptions (importing click costs time)
        from typer._click import exceptions as click_exc
    except ImportError:
        from click import exceptions as click_exc  # type: ignore[no-redef]  # same API, other copy
    try:
        code = app(args=args, prog_name="toolidx", standalone_mode=False)
    except ToolidxError as e:
        render.error(e, as_json)
        code = e.exit_code
    except typer.Abort:
        render.note("aborted")
        code = 130
    except click_exc.ClickException as e:
        e.show()
        code = EXIT_USAGE if e.exit_code == 2 else e.exit_code
        if as_json:  # the arguments did not parse: the JSON a script reads says so, as our own usage errors do
            ctx = getattr(e, "ctx", None)
            command = ctx.command_path if ctx is not None else "toolidx"
            render.emit_json("error", UsageError(e.format_message(), fix=f"see {command} --help").to_json())
    except KeyboardInterrupt:
        render.note("interrupted")
        code = 130
    except BrokenPipeError:
        code = 0
    except Exception as e:  # a damaged page of the index, met in any query: one line, not a traceback
        from ..store.db import damaged

        damage = damaged(e)
        if damage is None:
            raise
        render.error(damage, as_json)
        code = damage.exit_code
    finally:
        for database in _opened:
            with contextlib.suppress(Exception):  # closing folds the WAL into the file: a copied index is whole
                database.close()
        _opened.clear()
    _exit(code if isinstance(code, int) else 0, process=argv is None)


def _exit(code: int, process: bool) -> None:
    """End with `code`. `process`: main runs as the program (its own argv), not called in-process
    (tests): then serve stopped with its model still loading ends without finalizing the
    interpreter (serve.discovery.model_loading says why), its output flushed."""
    discovery = sys.modules.get("toolidx.serve.discovery")  # imported by serve only
    if process and discovery is not None and discovery.model_loading():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
