"""The command line: parse, call one library function, hand the result to `render`.

Errors become one line and an exit code in `main()` (0 ok, 1 a failure was found, 2 usage).
Heavy modules (mcp, fastembed, numpy) are imported inside commands, never at import time.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import List, Optional

import typer

from . import render
from .errors import EXIT_FAILURE, EXIT_USAGE, ToolidxError

app = typer.Typer(
    name="toolidx",
    help="One local SQLite index of every MCP tool: crawl servers, search tools, diff crawls, serve.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

DbOpt = typer.Option(None, "--db", envvar="TOOLIDX_DB", show_envvar=True,
                     help="Index file (default: ~/.local/share/toolidx/tools.db).")
JsonOpt = typer.Option(False, "--json", help="Print versioned JSON instead of a table.")
ModelOpt = typer.Option(None, "--model", help="Embedding model name (default: all-MiniLM-L6-v2; 'none' disables).")
ModelPathOpt = typer.Option(None, "--model-path", help="Local model directory (air-gapped; env TOOLIDX_MODEL_PATH).")


def _open(db: Optional[Path], create: bool = False):
    from .store import open_db

    return open_db(db, create=create)


# --- crawl / embed -----------------------------------------------------------------------------
@app.command()
def crawl(
    config: Path = typer.Option(..., "--config", "-c", envvar="TOOLIDX_CONFIG",
                                help="mcpServers config (JSON or YAML; Claude Desktop, Cursor, VS Code files work as is)."),
    db: Optional[Path] = DbOpt,
    server: List[str] = typer.Option([], "--server", "-s", help="Crawl only these servers (others are kept)."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, help="Servers at once (default 4)."),
    model: Optional[str] = ModelOpt,
    model_path: Optional[Path] = ModelPathOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Connect to every configured MCP server and index its tools. Exit 1 if any server failed."""
    from .config import load_config
    from .crawl import run_crawl
    from .embed import load_embedder, resolve_model

    cfg = load_config(config)
    only = list(server) or None
    cfg.enabled_servers(only)  # unknown --server names fail before the index is touched
    database = _open(db, create=True)
    embedder = load_embedder(resolve_model(model, str(model_path) if model_path else None, cfg.settings),
                             allow_download=True)
    from .progress import crawl_progress

    with crawl_progress(as_json) as progress:
        summary = run_crawl(cfg, database, only=only, concurrency=concurrency, embedder=embedder,
                            progress=progress)
    render.crawl_summary(summary, as_json)
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
    from .embed import load_embedder, resolve_model
    from .errors import ModelError
    from .store.crawls import embed_missing

    database = _open(db)
    embedder = load_embedder(resolve_model(model, str(model_path) if model_path else None), allow_download=True)
    if embedder is None:
        raise ModelError("no embedding model available",
                         fix="pass --model-path DIR or set TOOLIDX_MODEL_PATH to a local model folder")
    render.embed_result(embed_missing(database, embedder), embedder.model, as_json)


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
    as_json = "--json" in args or "--format=json" in args
    import click

    try:
        code = app(args=args, prog_name="toolidx", standalone_mode=False)
    except ToolidxError as e:
        render.error(e, as_json)
        code = e.exit_code
    except click.exceptions.Abort:
        render.note("aborted")
        code = 130
    except click.ClickException as e:
        e.show()
        code = EXIT_USAGE if e.exit_code == 2 else e.exit_code
    except KeyboardInterrupt:
        render.note("interrupted")
        code = 130
    except BrokenPipeError:
        code = 0
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
