"""One crawl: reach every enabled server (concurrently, capped), then write one snapshot.

A server that fails is reported and does not stop the others; the store keeps its previous tools,
marked stale. Only `connect.py` knows MCP; this module only schedules and hands results on.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.clock import now_iso
from ..core.embedding import Embedder, LazyEmbedder
from ..core.errors import UsageError
from ..core.servers import ServerResult, ServerSpec
from ..store.crawls import CrawlSummary, recorded_configs, recorded_owners
from ..store.index import Reader
from .config import DEFAULT_CONCURRENCY, Config
from .sources import load_tools_file
from .write import store_crawl


class CrawlProgress(Protocol):
    """What a progress display is told. `begin(specs)` and `entry_finished(spec, results)` are
    optional (a tools_file catalog entry may yield results under other server names)."""

    def server_started(self, spec: ServerSpec) -> None: ...

    def server_finished(self, result: ServerResult) -> None: ...

    def step(self, what: str, done: int, total: int) -> None: ...


class QuietProgress:
    """Says nothing: a crawl for a library caller, or a CLI run whose output is --json."""

    def server_started(self, spec: ServerSpec) -> None:
        pass

    def server_finished(self, result: ServerResult) -> None:
        pass

    def step(self, what: str, done: int, total: int) -> None:
        pass


def _failed(spec: ServerSpec, error: str, t0: float, started: str) -> ServerResult:
    return ServerResult(spec, "failed", started, duration_ms=round((time.perf_counter() - t0) * 1000, 1), error=error)


async def fetch_server(spec: ServerSpec) -> list[ServerResult]:
    """What one config entry yields (a tools_file catalog may yield several servers)."""
    t0, started = time.perf_counter(), now_iso()
    if spec.problem:
        return [_failed(spec, spec.problem, t0, started)]
    if spec.transport == "tools_file":
        return await asyncio.to_thread(load_tools_file, spec)
    from .connect import list_server_tools  # imports mcp (~1 s): only when a live server is crawled

    return [await list_server_tools(spec)]


async def gather_results(specs: list[ServerSpec], concurrency: int, progress: CrawlProgress) -> list[ServerResult]:
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(spec: ServerSpec) -> list[ServerResult]:
        async with sem:
            progress.server_started(spec)
            t0, started = time.perf_counter(), now_iso()
            try:
                results = await fetch_server(spec)
            except Exception as e:  # a bug in one server's handling must not sink the crawl
                results = [_failed(spec, f"internal error: {type(e).__name__}: {e}", t0, started)]
            for r in results:
                r.mask_secrets()  # before anything is shown or stored
                progress.server_finished(r)
            entry_finished = getattr(progress, "entry_finished", None)
            if entry_finished:
                entry_finished(spec, results)
            return results

    begin = getattr(progress, "begin", None)
    if begin:
        begin(specs)
    nested = await asyncio.gather(*(one(s) for s in specs))
    return claim_names(specs, nested)


def claim_names(specs: list[ServerSpec], nested: list[list[ServerResult]]) -> list[ServerResult]:
    """One result per server name. A config entry owns its own name; a catalog (tools_file) may
    file tools under other names, but not under a name another entry owns or an earlier catalog
    already filled: those tools are rejected (listed as invalid tools of the catalog's entry),
    the rest is indexed."""
    owners = {s.name for s in specs}
    taken: set[str] = set()
    out: list[ServerResult] = []
    for spec, results in zip(specs, nested):
        rejected: list[dict] = []
        kept: list[ServerResult] = []
        for r in results:
            name = r.spec.name
            if name != spec.name and (name in owners or name in taken):
                why = (
                    f"server {name!r} is another entry of the config"
                    if name in owners
                    else f"server {name!r} is already filled by an earlier catalog"
                )
                rejected += [{"name": f"{name}/{t.get('name')}", "reason": why} for t in r.tools]
                continue
            if name in taken:  # cannot happen for a config entry's own name, kept as a guard
                continue
            taken.add(name)
            kept.append(r)
        if rejected:
            home = next((r for r in kept if r.spec.name == spec.name), None) or (kept[0] if kept else None)
            if home is None:
                home = ServerResult(
                    spec,
                    "failed",
                    results[0].started_at if results else "",
                    error=f"all {len(rejected)} tools name servers it may not fill ({rejected[0]['reason']})",
                )
                taken.add(spec.name)
                kept.append(home)
            home.invalid_tools.extend(rejected)
        out.extend(kept)
    return out


def run_crawl(
    config: Config,
    db: Reader,
    *,
    only: list[str] | None = None,
    concurrency: int | None = None,
    embedder: Embedder | LazyEmbedder | None = None,
    progress: CrawlProgress | None = None,
    prune_other_configs: bool = False,
) -> CrawlSummary:
    """Crawl `config`'s enabled servers (`only`: these) into `db`. A full crawl removes the servers
    this config crawled before and no longer lists; other configs' servers in the same index stay
    unless `prune_other_configs` (docs/deploy.md: several CI jobs, one catalog)."""
    check_prune(only, prune_other_configs)
    specs = config.enabled_servers(only)
    progress = progress or QuietProgress()
    conc = concurrency or int(config.settings.get("concurrency", DEFAULT_CONCURRENCY))
    started = now_iso()
    results = asyncio.run(gather_results(specs, conc, progress))
    return store_crawl(
        db,
        results,
        embedder=embedder,
        config_path=_stored_path(config),
        prune=not only,
        started_at=started,
        progress=progress.step,
        owner=config_owner(config),
        prune_other_configs=prune_other_configs,
    )


def check_prune(only: list[str] | None, prune_other_configs: bool) -> None:
    """UsageError for --prune-other-configs with --server (before anything is opened or written)."""
    if prune_other_configs and only:
        raise UsageError(
            "--prune-other-configs removes every server the crawl did not reach: it needs a full crawl",
            fix="leave out --server, or leave out --prune-other-configs",
        )


def config_owner(config: Config) -> str | None:
    """The config's identity in an index (servers.owner): its `toolidx.owner` when it names one
    (stable across checkouts and machines: CI jobs), else its file's absolute path."""
    named = config.settings.get("owner")
    if isinstance(named, str) and named.strip():
        return named.strip()
    return _stored_path(config)


def _stored_path(config: Config) -> str | None:
    # stored absolute: serve later starts backends from it, from any working directory
    return os.path.abspath(config.path) if config.path and os.path.exists(config.path) else config.path


def recorded_config(db: Reader, only: list[str] | None = None) -> str:
    """The config to crawl when none is given: the one the index's servers (`only`: these) were
    crawled from, if it is one file that a crawl on this machine read and that still exists, or
    `--from CLIENTS` when a `crawl --from` crawled them (its owner names the clients; what it reads
    is this user's own client files, as `--from` reads them, so no trust record is needed).
    UsageError (one line, naming them) when the index records none, several, or one that is gone
    or was never read here (an index from elsewhere names no config this machine should run)."""
    from ..store.trust import trusted_config
    from .client_configs import owner, owner_clients

    froms = sorted({owner(c) for c in map(owner_clients, recorded_owners(db, only)) if c})
    # with a `--from` crawl's servers: only the configs of servers the index holds, not a stale record
    paths = recorded_configs(db, only, fallback=not froms) + froms
    fix = "pass --config FILE (or --from CLIENTS)"
    if not paths:
        raise UsageError(
            "no --config given, and the index records no config it was crawled from", where=db.path, fix=fix
        )
    if len(paths) > 1:
        raise UsageError(
            f"no --config given, and the index was crawled from {len(paths)} configs: {', '.join(paths)}",
            where=db.path,
            fix="pass --config with the one to crawl (or --server NAME to crawl one server's config)",
        )
    path = paths[0]
    if path in froms:
        return path
    if not os.path.isfile(path):
        raise UsageError(
            f"no --config given, and the config the index was crawled from is gone: {path}", where=db.path, fix=fix
        )
    if not trusted_config(path):
        raise UsageError(
            f"no --config given, and no crawl on this machine read the config the index names: {path}",
            where=db.path,
            fix=f"crawl it by name if you trust it: --config {path}",
        )
    return path


@dataclass
class EmbedResult:
    """What `embed` returns (`to_json()`: the `embed --json` document's body)."""

    embedded: int  # vectors written: tools that had none or an outdated one
    model: str

    def to_json(self) -> dict[str, Any]:
        return {"embedded": self.embedded, "model": self.model}


def embed(
    db: Reader, model: str | None = None, model_path: str | None = None, progress: CrawlProgress | None = None
) -> EmbedResult:
    """`toolidx embed`: fill in missing or outdated vectors with the model the one resolution order
    picks (`model` / `model_path`, the environment, the index's own model, the default).
    `progress.step` hears of the model loading and of the tools embedded."""
    from ..core.embedding import load_embedder, resolve_model
    from ..core.errors import ModelError
    from .write import embed_missing

    choice = resolve_model(
        model,
        model_path,
        indexed=db.get_meta("embed_model"),
        remembered_path=db.get_meta("embed_model_path"),
    )
    progress = progress or QuietProgress()
    progress.step("model", 0, 1)
    embedder = load_embedder(choice, allow_download=True)
    progress.step("model", 1, 1)
    if embedder is None:
        raise ModelError(
            f"the embedding model {choice.name!r} cannot be loaded here",
            fix="pass --model-path DIR (or set TOOLIDX_MODEL_PATH) to a local copy of it, or leave "
            "--model unset for toolidx's own model",
        )
    return EmbedResult(embed_missing(db, embedder, progress.step), embedder.model)
