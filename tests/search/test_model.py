"""toolidx's own embedding model (toolidx/models/tool-minilm-l6): shipped in the package, the
default, recorded in the index by name and file hash, loaded offline from an installed wheel, and
one resolution order (flag, environment, the index's model, the default) for every command."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import urllib.request
import zipfile
from contextlib import closing
from pathlib import Path

import pytest
from conftest import REPO, run_cli, write_config

from toolidx.core import embedding as emb_mod
from toolidx.core.errors import ModelError
from toolidx.store.db import open_db

CATALOG = REPO / "tests" / "data" / "search_catalog.jsonl"
CHECK = REPO / "tests" / "data" / "model_check.jsonl"


def packaged() -> emb_mod.ModelCard:
    card = emb_mod.packaged_models().get(emb_mod.DEFAULT_MODEL)
    assert card is not None, f"{emb_mod.DEFAULT_MODEL} is not in {emb_mod.PACKAGED_DIR}"
    return card


def test_the_default_model_ships_in_the_package_with_its_card():
    card = packaged()
    onnx = card.folder / "model.onnx"
    assert hashlib.sha256(onnx.read_bytes()).hexdigest() == card.sha256
    assert onnx.stat().st_size < 25_000_000 and card.dim == 384
    text = (card.folder / "MODEL_CARD.md").read_text()
    for must in ("Apache-2.0", "MIT", "MetaTool", "ETOM", "livemcp-natural", "never trained on"):
        assert must in text, must
    trained = json.loads((card.folder / "model.json").read_text())["trained_on"]
    assert trained["etom/queries.jsonl"], "the card lists the bench queries it was trained on"


def test_resolution_order_flag_environment_index_default(monkeypatch, tmp_path, model_path):
    monkeypatch.delenv("TOOLIDX_MODEL_PATH", raising=False)
    monkeypatch.delenv("TOOLIDX_MODEL", raising=False)
    assert emb_mod.resolve_model().name == emb_mod.DEFAULT_MODEL  # nothing set: toolidx's own
    assert emb_mod.resolve_model(indexed=emb_mod.MINILM, remembered_path=model_path).path == model_path  # the index's
    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)  # a bare folder: MiniLM's layout
    env = emb_mod.resolve_model(indexed=emb_mod.DEFAULT_MODEL)
    assert (env.name, env.path) == (emb_mod.MINILM, model_path)  # the environment beats the index
    flag = emb_mod.resolve_model(name=emb_mod.DEFAULT_MODEL, indexed=emb_mod.MINILM)
    assert flag.path == str(packaged().folder)  # a packaged name always loads the packaged files
    assert emb_mod.resolve_model(name="none").name is None
    # a folder that names its model refuses to be read as another one
    with pytest.raises(ModelError, match="holds model"):
        emb_mod.resolve_model(name=emb_mod.MINILM, path=str(packaged().folder))


def test_a_crawl_keeps_the_index_model_and_reembeds_when_it_changes(monkeypatch, tmp_path, model_path):
    cfg = write_config(tmp_path / "c.json", {"cat": {"tools_file": str(CATALOG)}})
    db = tmp_path / "i.db"

    def meta():
        with closing(open_db(db, readonly=True)) as d:
            return (
                d.get_meta("embed_model"),
                d.get_meta("embed_model_sha256"),
                {r["id"]: r["embed_hash"] for r in d.query("SELECT id, embed_hash FROM tools")},
            )

    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)
    assert run_cli("crawl", "--config", cfg, "--db", db).code == 0
    name, _, hashes = meta()
    assert name == emb_mod.MINILM
    monkeypatch.delenv("TOOLIDX_MODEL_PATH")
    assert run_cli("crawl", "--config", cfg, "--db", db).code == 0  # nothing set: the index's model stays
    assert meta()[0] == emb_mod.MINILM and meta()[2] == hashes
    r = run_cli("crawl", "--config", cfg, "--db", db, "--model", emb_mod.DEFAULT_MODEL)
    assert r.code == 0, r.stderr
    name, sha, new = meta()
    assert (name, sha) == (emb_mod.DEFAULT_MODEL, packaged().sha256)
    assert all(new[t] != hashes[t] for t in hashes), "every tool is embedded again by the new model"
    r = run_cli("search", "what will the weather be tomorrow in Paris", "--db", db, "--json")
    assert r.code == 0 and r.json["hits"][0]["id"] == "weather/get_forecast"
    assert not any("uncalibrated" in n for n in r.json["notes"]), r.json["notes"]


@pytest.mark.model
def test_the_shipped_model_finds_tools_on_a_fixed_set(tmp_path):
    """Not a benchmark: a broken export (wrong pooling, a drifted quantisation) fails it."""
    from toolidx.crawl.config import build_config
    from toolidx.crawl.run import run_crawl
    from toolidx.search.eval import evaluate

    emb = emb_mod.load_embedder(emb_mod.resolve_model(name=emb_mod.DEFAULT_MODEL))
    assert emb is not None and emb.model == emb_mod.DEFAULT_MODEL
    db = open_db(tmp_path / "m.db", create=True)
    run_crawl(build_config({"mcpServers": {"cat": {"tools_file": str(CATALOG)}}}, None), db, embedder=emb)
    rep = evaluate(db, CHECK, modes=("semantic", "hybrid"), embedder=emb)
    for mode in ("semantic", "hybrid"):
        m = rep.modes[mode].metrics
        assert m["R@1"] >= 0.85 and m["R@5"] == 1.0, (mode, m, rep.modes[mode].misses)


def build_wheel(wheels) -> Path:
    """toolidx's wheel, built from this checkout into `wheels` (no isolated, networked build)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return next(Path(wheels).glob("toolidx-*.whl"))


def offline_env(tmp_path) -> dict[str, str]:
    """The environment of a user's machine: no model setting, no Hugging Face download, an empty cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLIDX_MODEL")}
    return env | {"HF_HUB_OFFLINE": "1", "TOOLIDX_CACHE_DIR": str(tmp_path / "nocache"), "PYTHONPATH": ""}


@pytest.mark.slow
def test_the_shipped_model_loads_from_an_installed_wheel_offline(tmp_path):
    """Build the wheel, unpack it, and crawl + search from it with no network, no ../shared and no
    model setting: the model inside the wheel is found, embedded with and recorded."""
    wheel = build_wheel(tmp_path / "wheels")
    # two models of 23 MB each: v2, the default, and v1 for the indexes embedded with it
    assert wheel.stat().st_size < 55_000_000, f"wheel is {wheel.stat().st_size} bytes"
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert "toolidx/models/tool-minilm-l6-v2/model.onnx" in names and "toolidx/search/calibration.json" in names
        assert "toolidx/models/tool-minilm-l6/model.onnx" in names  # v1
        assert "toolidx/search/words.txt" in names  # search.spelling reads it for a word no tool has
        assert "toolidx/search/derive.txt" in names  # search.derive: "remember" and the `memory` server
        z.extractall(site)
    cfg = write_config(tmp_path / "c.json", {"cat": {"tools_file": str(CATALOG)}})
    env = offline_env(tmp_path)

    def toolidx(*args: str) -> str:
        code = (
            f"import sys; sys.path.insert(0, {str(site)!r}); import toolidx; "
            f"assert toolidx.__file__.startswith({str(site)!r}), toolidx.__file__; "
            f"from toolidx.cli.main import main; main({list(args)!r})"
        )
        r = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert r.returncode == 0, r.stderr
        return r.stdout

    toolidx("crawl", "--config", str(cfg), "--db", "w.db", "--json")
    out = json.loads(toolidx("search", "merge pdf files", "--db", "w.db", "--json", "--mode", "semantic"))
    assert out["mode_used"] == "semantic" and out["hits"][0]["id"] == "pdf/merge_pdfs"
    slip = json.loads(toolidx("search", "merge pdf fiels", "--db", "w.db", "--json"))
    assert "files" in slip["corrections"]["fiels"] and slip["hits"][0]["id"] == "pdf/merge_pdfs"
    with closing(open_db(tmp_path / "w.db", readonly=True)) as d:
        assert d.get_meta("embed_model") == emb_mod.DEFAULT_MODEL
        assert d.get_meta("embed_model_sha256") == packaged().sha256
        assert not d.get_meta("embed_model_path"), "a packaged model is found by name, not by where it was"


@pytest.mark.slow
def test_pipx_installs_the_wheel_for_real_use(tmp_path):
    """#36 item 9, as the README says: `pipx install` of the built wheel into folders of its own
    (not this venv, not the clone), then its `toolidx` crawls a tools_file and searches with the
    model inside the wheel, offline. Dependencies come from the package index pip is set up with."""
    wheel = build_wheel(tmp_path / "wheels")
    env = offline_env(tmp_path) | {
        "PIPX_HOME": str(tmp_path / "pipx"),
        "PIPX_BIN_DIR": str(tmp_path / "bin"),
        "PIPX_MAN_DIR": str(tmp_path / "man"),
        "VIRTUAL_ENV": "",
    }
    r = subprocess.run(
        [sys.executable, "-m", "pipx", "install", str(wheel)], env=env, capture_output=True, text=True, timeout=900
    )
    assert r.returncode == 0, r.stdout + r.stderr
    exe = tmp_path / "bin" / "toolidx"
    assert exe.is_file() and not str(exe.resolve()).startswith(str(REPO))
    where = tmp_path / "user"  # no clone around: a folder of the user's, with their saved tool list
    where.mkdir()
    (where / "files-tools.json").write_text((REPO / "examples" / "files-tools.json").read_text())
    (where / "servers.yaml").write_text("mcpServers:\n  files:\n    tools_file: files-tools.json\n")

    def toolidx(*args: str) -> str:
        r = subprocess.run([str(exe), *args], cwd=where, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout

    crawled = json.loads(toolidx("crawl", "--config", "servers.yaml", "--db", "tools.db", "--json"))
    assert crawled["semantic"] and crawled["embedded"] == crawled["tools"] > 0
    found = json.loads(toolidx("search", "convert a pdf to text", "--db", "tools.db", "--json"))
    assert found["mode_used"] == "hybrid" and found["hits"][0]["id"] == "files/pdf_to_text"
    assert toolidx("--version").startswith("toolidx ")
    # #45 item 1: the console is in this install too (Jinja2 is a dependency, not an extra)
    ui = subprocess.Popen(
        [str(exe), "ui", "--db", "tools.db", "--no-open"], cwd=where, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert ui.stdout is not None
        link = ui.stdout.readline().strip()  # printed once the port is bound
        opened = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPCookieProcessor())
        with opened.open(link, timeout=60) as page:  # the one-time link: a session
            assert page.status == 200
        with opened.open(link.split("/login")[0] + "/", timeout=60) as page:  # the search page
            assert page.status == 200 and 'id="q"' in page.read().decode()
    finally:
        ui.terminate()
        ui.wait(timeout=30)


def test_an_index_embedded_with_v1_keeps_searching_with_v1(monkeypatch, tmp_path):
    """v2 is the default; v1 stays in the package, so an index embedded with it before the upgrade
    searches as it did (its own constants, its own gate) until it is re-embedded."""
    v1 = "toolidx/tool-minilm-l6-v1"
    assert v1 in emb_mod.packaged_models() and v1 != emb_mod.DEFAULT_MODEL
    monkeypatch.delenv("TOOLIDX_MODEL_PATH", raising=False)
    cfg = write_config(tmp_path / "c.json", {"cat": {"tools_file": str(CATALOG)}})
    db = tmp_path / "i.db"
    assert run_cli("crawl", "--config", cfg, "--db", db, "--model", v1).code == 0
    assert run_cli("crawl", "--config", cfg, "--db", db).code == 0  # nothing named: the index's model stays
    with closing(open_db(db, readonly=True)) as d:
        assert d.get_meta("embed_model") == v1
    r = run_cli("search", "what will the weather be tomorrow in Paris", "--db", db, "--json")
    assert r.code == 0 and r.json["hits"][0]["id"] == "weather/get_forecast"
    assert not any("uncalibrated" in n for n in r.json["notes"]), r.json["notes"]
    r = run_cli("embed", "--db", db, "--model", emb_mod.DEFAULT_MODEL)  # the upgrade: one command
    assert r.code == 0, r.stderr
    with closing(open_db(db, readonly=True)) as d:
        assert d.get_meta("embed_model") == emb_mod.DEFAULT_MODEL
