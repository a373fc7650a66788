"""Embeddings during crawl with the real model: only changed texts are embedded; with no model the
crawl still succeeds lexically, warns once, and `toolidx embed` fills the vectors in later."""

from __future__ import annotations

import json
import sys
from contextlib import closing
from pathlib import Path

import pytest
from conftest import run_cli

from toolidx.store.db import open_db

pytestmark = [pytest.mark.model]

RAW = Path(__file__).parents[1] / "servers" / "rawmcp.py"


def config(path: Path, *args: str, tools: int = 4) -> Path:
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "svc": {"command": sys.executable, "args": [str(RAW), "--tools", str(tools), *args]},
                    "files": {"tools_file": str(Path(__file__).parents[2] / "examples" / "files-tools.json")},
                }
            }
        )
    )
    return path


def vec_count(db_path: Path) -> int:
    db = open_db(db_path)
    try:
        return int(db.scalar("SELECT count(*) FROM tool_vectors"))
    finally:
        db.close()


def test_recrawl_embeds_only_what_changed(tmp_path, model_path):
    db = tmp_path / "e.db"
    cfg = config(tmp_path / "c.json")
    first = run_cli("crawl", "--config", cfg, "--db", db, "--model-path", model_path, "--json")
    assert first.code == 0, first.stderr
    total = first.json["tools"]
    assert first.json["semantic"] and first.json["embedded"] == total > 4
    assert vec_count(db) == total
    # nothing changed: nothing embedded, every tool unchanged
    again = run_cli("crawl", "--config", cfg, "--db", db, "--model-path", model_path, "--json")
    assert again.code == 0 and again.json["embedded"] == 0 and again.json["unchanged"] == total
    # one description changed: exactly that tool is embedded again
    changed = run_cli(
        "crawl",
        "--config",
        config(tmp_path / "c2.json", "--desc-suffix", " Now with globs."),
        "--db",
        db,
        "--model-path",
        model_path,
        "--json",
    )
    assert changed.json["embedded"] == 1 and changed.json["changed"] == 1
    d = open_db(db)
    assert d.get_meta("embed_model") == "sentence-transformers/all-MiniLM-L6-v2" and d.get_meta("embed_dim") == "384"
    assert d.scalar("SELECT count(*) FROM tools WHERE embed_hash IS NULL") == 0
    # vectors line up with tools (rowid shared)
    assert d.scalar("SELECT count(*) FROM tool_vectors v JOIN tools t ON t.rowid = v.rowid") == total
    d.close()
    # the versions of each crawl are kept for diff: crawl 3 saw a new hash for svc/tool_0
    d = open_db(db)
    h = {
        r["crawl_id"]: r["hash"] for r in d.query("SELECT crawl_id, hash FROM crawl_tools WHERE tool_id = 'svc/tool_0'")
    }
    assert h[1] == h[2] != h[3]
    assert d.scalar("SELECT count(*) FROM tool_versions") == total + 1
    d.close()


def test_offline_first_run_is_lexical_then_embed_fills_in(tmp_path, model_path, monkeypatch):
    monkeypatch.delenv("TOOLIDX_MODEL_PATH", raising=False)
    monkeypatch.delenv("TOOLIDX_MODEL", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no network: a hub model by name cannot be fetched
    from toolidx.core import embedding as embed

    embed._cache.clear()
    db = tmp_path / "o.db"
    cfg = config(tmp_path / "c.json")
    r = run_cli("crawl", "--config", cfg, "--db", db, "--model", embed.MINILM, "--json")
    assert r.code == 0, r.stderr
    assert not r.json["semantic"] and r.json["embedded"] == 0 and r.json["tools"] > 0
    warnings = [line for line in r.stderr.splitlines() if "warning" in line]
    # one warning that says what happened and what to do (never "run toolidx embed" while embed runs)
    assert len(warnings) == 1 and "keyword-only" in warnings[0] and "--model-path" in warnings[0]
    d = open_db(db)
    assert d.scalar("SELECT count(*) FROM tools_fts WHERE tools_fts MATCH 'file'") > 0  # lexical works
    assert d.get_meta("embed_model") is None
    d.close()
    # later, with the model at hand
    e = run_cli("embed", "--db", db, "--model-path", model_path, "--json")
    assert e.code == 0, e.stderr
    assert e.json["embedded"] == r.json["tools"] == vec_count(db)
    # and a following crawl has nothing left to embed
    again = run_cli("crawl", "--config", cfg, "--db", db, "--model-path", model_path, "--json")
    assert again.json["embedded"] == 0


def test_bogus_model_name_warns_and_crawls(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLIDX_MODEL_PATH", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = run_cli(
        "crawl",
        "--config",
        config(tmp_path / "c.json"),
        "--db",
        tmp_path / "b.db",
        "--model",
        "no-such/model-anywhere",
        "--json",
    )
    assert r.code == 0 and not r.json["semantic"]
    assert r.stderr.count("no-such/model-anywhere") == 1


def test_model_none_is_quietly_lexical(tmp_path):
    r = run_cli(
        "crawl", "--config", config(tmp_path / "c.json"), "--db", tmp_path / "n.db", "--model", "none", "--json"
    )
    assert r.code == 0 and not r.json["semantic"] and "warning" not in r.stderr


def test_model_path_that_is_not_a_model_is_an_error(tmp_path):
    r = run_cli("crawl", "--config", config(tmp_path / "c.json"), "--db", tmp_path / "m.db", "--model-path", tmp_path)
    assert r.code == 2 and len(r.stderr.strip().splitlines()) == 1


def test_unchanged_recrawl_never_loads_the_model(tmp_path, model_path):
    """The model loads only when some text needs embedding: a re-crawl with nothing changed must
    succeed even with a model folder that would fail to load (a junk model.onnx)."""
    db = tmp_path / "u.db"
    cfg = config(tmp_path / "c.json")
    assert run_cli("crawl", "--config", cfg, "--db", db, "--model-path", model_path).code == 0
    junk = tmp_path / "junk-model"
    junk.mkdir()
    (junk / "model.onnx").write_bytes(b"not an onnx model")
    again = run_cli("crawl", "--config", cfg, "--db", db, "--model-path", junk, "--json")
    assert again.code == 0, again.stderr
    assert again.json["embedded"] == 0 and again.json["semantic"]
    # a changed tool does need the model, and the junk folder is then reported in one line
    changed = config(tmp_path / "c2.json", tools=5)
    bad = run_cli("crawl", "--config", changed, "--db", db, "--model-path", junk)
    assert bad.code == 2 and "junk-model" in bad.stderr


def test_index_remembers_its_local_model_folder(tmp_path, model_path):
    """Crawled with --model-path, the index records the folder: a later search in a new process,
    with no model setting at all, is semantic without being told where the model is."""
    import os
    import subprocess

    db = tmp_path / "r.db"
    assert run_cli("crawl", "--config", config(tmp_path / "c.json"), "--db", db, "--model-path", model_path).code == 0
    idx = open_db(db)
    assert idx.get_meta("embed_model_path") == str(Path(model_path).resolve())
    idx.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLIDX_MODEL")}
    out = subprocess.run(
        [sys.executable, "-m", "toolidx", "search", "read a text file", "--db", str(db), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["mode_used"] == "hybrid" and "warning" not in out.stderr


def test_embed_in_a_pipe_says_what_it_does_as_it_goes(tmp_path, model_path):
    """#36 item 1: `toolidx embed` printed nothing until done. In a pipe: plain lines on stderr,
    the model loading, then tools embedded (the first at 0, the last at all of them)."""
    db = tmp_path / "p.db"
    assert run_cli("crawl", "--config", config(tmp_path / "c.json", tools=40), "--db", db, "--model", "none").code == 0
    r = run_cli("embed", "--db", db, "--model-path", model_path)
    assert r.code == 0, r.stderr
    lines = r.stderr.splitlines()
    total = vec_count(db)
    assert total > 40
    assert lines[0] == "embed: loading the model…" and "embed: model loaded" in lines
    steps = [ln for ln in lines if ln.startswith("embed: embedding ")]
    assert steps[0] == f"embed: embedding 0/{total} tools" and steps[-1] == f"embed: embedding {total}/{total} tools"
    assert r.stdout == "" and "embedded" in lines[-1]


def test_crawl_and_embed_on_a_terminal_show_the_model_and_the_tools(tmp_path, model_path):
    """#36 item 1: after the servers were done the screen stayed still while the model loaded and
    the first 256 tools embedded; now the live line says each step."""
    from conftest import run_pty

    db = tmp_path / "t.db"
    r = run_pty("crawl", "--config", config(tmp_path / "c.json", tools=40), "--db", db, "--model-path", model_path)
    assert r.code == 0, r.screen
    total = vec_count(db)
    assert "loading the model…" in r.screen
    assert f"embedding 0/{total} tools" in r.screen and f"embedding 32/{total} tools" in r.screen
    later = tmp_path / "later.db"
    assert (
        run_cli("crawl", "--config", config(tmp_path / "c.json", tools=40), "--db", later, "--model", "none").code == 0
    )
    e = run_pty("embed", "--db", later, "--model-path", model_path)
    assert e.code == 0, e.screen
    assert "loading the model…" in e.screen and f"embedding 32/{total} tools" in e.screen
    assert f"embedded {total} tools with" in e.screen


def test_ctrl_c_during_embed_writes_nothing_and_says_so(tmp_path, model_path):
    from conftest import run_pty

    db = tmp_path / "i.db"
    assert run_cli("crawl", "--config", config(tmp_path / "c.json", tools=300), "--db", db, "--model", "none").code == 0
    r = run_pty("embed", "--db", db, "--model-path", model_path, interrupt_after="embedding 32/")
    assert r.code == 130, r.screen
    assert "interrupted: nothing written, the index is as before" in r.screen
    with closing(open_db(db)) as d:
        assert (
            not d.get_meta("embed_model")
            and int(d.scalar("SELECT count(*) FROM tools WHERE embed_hash IS NOT NULL")) == 0
        )


QUERY_TEXTS = [
    "convert a pdf to text",
    "send an email to the team about tomorrow's meeting",
    "word " * 700,  # past the 512-token truncation
    "[CLS] hello [SEP] [PAD] [MASK] x [UNK]",  # special tokens as text
    "Ünïcödé 東京 🚀",
    "",
]


@pytest.mark.parametrize("which", ["model_path", "packaged"])
def test_query_vectors_without_fastembed_are_fastembeds_byte_for_byte(which, model_path, monkeypatch):
    """A search loads a model folder with onnxruntime and tokenizers alone (importing fastembed cost
    0.5-1 s of a server's start): its query vectors are fastembed's, bytes and all, for the shared
    MiniLM and toolidx's own model (whose tokenizer.json pads to a fixed 128, which fastembed does not)."""
    import numpy as np
    from fastembed import TextEmbedding

    from toolidx.core import embedding
    from toolidx.core.embedding import DEFAULT_MODEL, QUERY_THREADS, FastEmbedder, load_embedder, resolve_model

    monkeypatch.setattr(embedding, "_cache", {})  # loaded here, not the session's embedder
    choice = resolve_model(None, model_path) if which == "model_path" else resolve_model(DEFAULT_MODEL)
    assert embedding.is_packaged(choice.path) == (which == "packaged")
    assert choice.path
    emb = load_embedder(choice, threads=QUERY_THREADS)
    assert isinstance(emb, FastEmbedder) and emb._te is None  # fastembed not loaded for queries
    te = TextEmbedding(
        model_name=choice.architecture, specific_model_path=choice.path, local_files_only=True, threads=QUERY_THREADS
    )
    for text in QUERY_TEXTS:
        want = np.asarray(next(iter(te.query_embed([text]))), dtype=np.float32).tobytes()
        assert emb.embed_query(text) == want, text[:40]
    # documents still go through fastembed's batches, made at the first batch
    assert emb.embed_documents(QUERY_TEXTS[:2]) == [
        np.asarray(v, dtype=np.float32).tobytes() for v in te.embed(QUERY_TEXTS[:2])
    ]
    assert emb._te is not None


def test_a_search_never_imports_fastembed(tmp_path, model_path):
    """The query embedder of a model folder, loaded and run, leaves fastembed unimported."""
    import subprocess

    code = (
        "import sys; from toolidx.core.embedding import *; "
        f"e = load_embedder(resolve_model(None, {model_path!r}), threads=QUERY_THREADS); e.embed_query('hi'); "
        "print('fastembed' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
