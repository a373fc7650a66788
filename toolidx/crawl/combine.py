"""`toolidx merge`: index files crawled apart (shards of a large config, crawled in parallel in CI)
made into one index, as if one crawl had read every server.

The output is built in a temporary file beside it and renamed over it only when it is whole, so
OUT is never half-written; an input is never written to, nor overwritten. A postgresql:// input
or output is a catalog in PostgreSQL (store/pg/): an output there is replaced in one
transaction, so a team moves from a file to PostgreSQL, and a CI job publishes a file from it. Vectors are copied when
every input that has them used the same model (`meta.embed_model`, `embed_dim`); otherwise nothing
is written and the error says which inputs differ. The SQL is in `store/merge.py`.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import DatabaseError, UsageError
from ..core.files import private_dir, remove_database_files
from ..store import merge as store
from ..store.db import open_db, same_catalog
from ..store.index import Reader
from ..store.trust import trusted_launch
from ..store.urls import is_pg_url, public_url


@dataclass
class MergeResult:
    output: str
    inputs: list[dict] = field(default_factory=list)  # [{path, servers, tools, crawls, embed_model}]
    servers: int = 0
    tools: int = 0
    crawls: int = 0
    vectors: int = 0  # copied as stored
    missing_vectors: int = 0  # tools without a vector (`toolidx embed --db OUT` fills them in)
    embed_model: str | None = None
    embed_dim: int | None = None
    conflicts: list[dict] = field(default_factory=list)  # [{server, kept, kept_crawled_at, dropped,
    #                                                       launch_differs, launches}]
    launch_differs: list[str] = field(default_factory=list)  # servers the inputs start differently
    # servers whose launch line no crawl on this machine wrote: serve and check need --config (or
    # --trust-index) to start them
    untrusted: list[str] = field(default_factory=list)
    # approvals the inputs held: never carried (an input cannot approve tools for the merged index)
    approvals_dropped: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


Target = Path | str  # an index file, or a postgresql:// URL


def _target(p: str | os.PathLike) -> Target:
    text = os.fspath(p)
    return text if is_pg_url(text) else Path(text).expanduser()


def _same(a: Target, b: Target) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and same_catalog(a, b)
    return _same_file(a, b)


def _check_paths(inputs: list[Target], output: Target) -> None:
    if not inputs:
        raise UsageError("nothing to merge", fix="toolidx merge A.db B.db -o OUT.db")
    for i, p in enumerate(inputs):
        if any(_same(p, q) for q in inputs[:i]):
            raise UsageError("the same index is given twice", where=str(p), fix="name each input once")
        if _same(p, output):
            raise UsageError(
                "refusing to overwrite an input with the merged index",
                where=public_url(output) if isinstance(output, str) else str(output),
                fix="write the merged index to a new file: -o MERGED.db",
            )
    if isinstance(output, str):
        return
    if output.is_dir():
        raise UsageError("is a directory, not an index file", where=str(output))
    if output.exists():  # replaced only if it is an index (never someone's other file)
        open_db(output, readonly=True).close()


def _model(sources: list[store.Source]) -> tuple[str, int] | None:
    models = {s.model for s in sources if s.model is not None}
    if len(models) > 1:
        which = "; ".join(
            f"{s.db.path}: {s.model[0]} ({s.model[1]} dimensions)" for s in sources if s.model is not None
        )
        raise UsageError(
            f"cannot merge vectors from different models ({which})",
            fix="crawl every shard with the same --model, or re-embed one with `toolidx embed --db FILE --model NAME`",
        )
    return next(iter(models), None)


def _temp_path(output: Path) -> Path:
    return output.with_name(f".{output.name}.{os.getpid()}.merging")


def _sweep_killed(output: Path) -> None:
    """Remove the temporary files of merges into `output` that were killed (SIGKILL, a power cut:
    no `finally` ran), each named by its merge's PID. A live PID's files are another merge's, under
    way: kept (a reused PID only keeps a leftover a while longer)."""
    import re

    prefix = f".{output.name}."
    try:
        names = [p.name for p in output.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return
    for name in names:
        m = re.fullmatch(r"(\d+)\.merging(?:-wal|-shm|-journal)?", name[len(prefix) :])
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            with contextlib.suppress(OSError):
                (output.parent / name).unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: a number no process can have
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read(
    inputs: list[Target], opened: list[Reader]
) -> tuple[list[store.Source], tuple[str, int] | None, dict[str, store.Source], list[dict], str | None]:
    """Open and read every input: (sources, model, owner of each server, conflicts, model path)."""
    for p in inputs:
        opened.append(open_db(p, readonly=True))
        bad = store.malformed_row(opened[-1])
        if bad:  # a hand-edited or damaged input: one line, before anything is written
            raise DatabaseError(
                f"malformed row, {bad}; nothing was merged",
                where=opened[-1].path,
                fix="crawl that input again (or restore it), then merge",
            )
    sources = [store.read_source(db, i) for i, db in enumerate(opened)]
    model = _model(sources)
    owner, conflicts = store.owners(sources)
    model_path = next(
        (s.db.get_meta("embed_model_path") for s in sources if s.model == model and s.db.get_meta("embed_model_path")),
        None,
    )
    return sources, model, owner, conflicts, model_path


def merge_indexes(inputs: list[str | os.PathLike], output: str | os.PathLike) -> MergeResult:
    """Merge `inputs` (toolidx index files or postgresql:// catalogs) into a new index at `output`
    (replaced if it is an index already). Raises UsageError/DatabaseError (nothing written) on
    unusable inputs, an output that is an input, or vectors from different models."""
    targets, out_target = [_target(p) for p in inputs], _target(output)
    _check_paths(targets, out_target)
    if isinstance(out_target, str):
        return _merge_into_catalog(targets, out_target)
    output = out_target
    opened: list[Reader] = []
    tmp = _temp_path(output)
    try:
        sources, model, owner, conflicts, model_path = _read(targets, opened)
        private_dir(output.parent)
        _sweep_killed(output)
        remove_database_files(tmp)
        untrusted = sorted(name for name, s in owner.items() if not trusted_launch(s.launch(name)["hash"]))
        out = open_db(tmp, create=True)
        try:
            counts = store.write_merged(out, sources, owner, model, model_path)
            configs = {s.db.get_meta("config_path") for s in sources}
            if len(configs) == 1 and None not in configs:
                out.set_meta("config_path", configs.pop())
            store.checkpoint(out)
        finally:
            out.close()
        with contextlib.suppress(OSError):
            _fsync(tmp)
        if output.exists():  # fold the old file's WAL in first, so none is left to replay onto the new one
            old = open_db(output)
            store.checkpoint(old)
            old.close()
        os.replace(tmp, output)
        with contextlib.suppress(OSError):
            _fsync(output.parent)
    except DatabaseError as e:
        remove_database_files(tmp)
        if e.where != str(tmp):
            raise
        raise DatabaseError(f"{e.what}; {output} is unchanged", where=str(output), fix=e.fix) from None
    except BaseException:
        remove_database_files(tmp)
        raise
    finally:
        for db in opened:
            db.close()
    return _result(str(output), sources, counts, model, conflicts, untrusted)


def _merge_into_catalog(inputs: list[Target], url: str) -> MergeResult:
    """Merge into a PostgreSQL catalog: made if new, else emptied and filled in one transaction."""
    opened: list[Reader] = []
    try:
        sources, model, owner, conflicts, model_path = _read(inputs, opened)
        untrusted = sorted(name for name, s in owner.items() if not trusted_launch(s.launch(name)["hash"]))
        out = open_db(url, create=True)
        try:
            counts = store.write_merged(out, sources, owner, model, model_path, replace=True)
            configs = {s.db.get_meta("config_path") for s in sources}
            if len(configs) == 1 and None not in configs:
                out.set_meta("config_path", configs.pop())
            shown = out.path
        finally:
            out.close()
    finally:
        for db in opened:
            db.close()
    return _result(shown, sources, counts, model, conflicts, untrusted)


def _result(
    output: str,
    sources: list[store.Source],
    counts: dict[str, int],
    model: tuple[str, int] | None,
    conflicts: list[dict],
    untrusted: list[str],
) -> MergeResult:
    return MergeResult(
        output=output,
        inputs=[
            {
                "path": s.db.path,
                "servers": len(s.servers),
                "crawls": len(s.crawls),
                "tools": s.tool_count,
                "embed_model": s.model[0] if s.model else None,
            }
            for s in sources
        ],
        servers=counts["servers"],
        tools=counts["tools"],
        crawls=counts["crawls"],
        vectors=counts["vectors"],
        missing_vectors=counts["missing_vectors"],
        embed_model=model[0] if model else None,
        embed_dim=model[1] if model else None,
        conflicts=conflicts,
        launch_differs=[c["server"] for c in conflicts if c["launch_differs"]],
        untrusted=untrusted,
        approvals_dropped=sum(s.approvals for s in sources),
    )
