"""Embeddings: the embedder protocol, its fastembed implementation, and model resolution.

Default model: toolidx's own, `toolidx/tool-minilm-l6-v1` (all-MiniLM-L6-v2 fine-tuned on requests
and tool descriptions, training/ rebuilds it; 384 dimensions, int8 ONNX, 23 MB), shipped inside
the package: it loads offline, with no download. Search's fusion weights, scores and "no good
match" gate are fitted per model (search.calibration); sentence-transformers/all-MiniLM-L6-v2 has
its own, and any other fastembed model is searched uncalibrated (rank fusion, no gate).

Resolution, one order for every command (the first that is set wins):
  1. --model / --model-path
  2. TOOLIDX_MODEL / TOOLIDX_MODEL_PATH
  3. the config's `toolidx.model` / `toolidx.model_path` (crawl)
  4. the model the index was embedded with (its name, and the folder it was loaded from while that
     folder exists): a re-crawl or `embed` keeps an index's model unless told otherwise
  5. the default above ("none" disables)
A packaged model's name always loads the packaged files. A folder names its model in model.json
(toolidx's own folders) or by --model; a bare folder with neither is read as all-MiniLM-L6-v2,
the layout fastembed expects for it. Without a folder a fastembed model comes from toolidx's cache
(TOOLIDX_CACHE_DIR, default ~/.cache/toolidx/models); only `crawl` and `embed` may download it,
and only when the model hub is reachable. With no model, everything still works lexically and
says so once.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from .errors import ModelError
from .notices import warn_once

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGED_DIR = Path(__file__).resolve().parents[1] / "models"
BATCH_SIZE = 64


@dataclass(frozen=True)
class ModelCard:
    """A model folder's model.json: who it is, which fastembed layout loads it, its file's hash."""

    name: str
    version: str
    architecture: str  # the fastembed model whose pooling and layout it shares
    sha256: str
    dim: int
    folder: Path


def read_card(folder: Path) -> ModelCard | None:
    try:
        d = json.loads((folder / "model.json").read_text())
        return ModelCard(
            str(d["name"]), str(d["version"]), str(d["architecture"]), str(d["sha256"]), int(d["dim"]), folder
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


@cache
def packaged_models() -> dict[str, ModelCard]:
    """The models inside the package, by name."""
    cards = [read_card(d) for d in sorted(PACKAGED_DIR.iterdir())] if PACKAGED_DIR.is_dir() else []
    return {c.name: c for c in cards if c is not None}


# v2 (issue 32); v1 stays in the package for the indexes embedded with it (they keep searching with
# it, with its own constants, until `toolidx embed --model toolidx/tool-minilm-l6-v2`)
DEFAULT_MODEL = "toolidx/tool-minilm-l6-v2"


class Embedder(Protocol):
    model: str  # the model name stored in the index
    dim: int
    sha256: str | None  # of the model file, where known (recorded in the index beside the name)

    def embed_documents(self, texts: Sequence[str]) -> list[bytes]: ...

    def embed_query(self, text: str) -> bytes: ...


class _IndexModel(Enum):
    INDEX_MODEL = "the index's model"


# `embedder=INDEX_MODEL`: the query embedder of the model the index was embedded with, loaded when a
# search needs it (search.hybrid.get_query_embedder); None searches without a model.
INDEX_MODEL = _IndexModel.INDEX_MODEL
QueryEmbedder = Embedder | _IndexModel | None


@dataclass
class ModelChoice:
    name: str | None  # None: embeddings disabled
    path: str | None
    explicit: bool  # the user asked for this model: failing to load it is an error, not a warning
    architecture: str = MINILM  # the fastembed model name that loads it
    sha256: str | None = None  # of model.onnx, where the folder's model.json says it


def resolve_model(
    name: str | None = None,
    path: str | None = None,
    settings: dict | None = None,
    remembered_path: str | None = None,
    indexed: str | None = None,
) -> ModelChoice:
    """The model to use, in the module's order. `indexed`: the index's model (meta `embed_model`),
    `remembered_path`: the folder it was embedded from (meta `embed_model_path`), used only while it
    still exists."""
    s = settings or {}
    explicit = bool(name or path)
    name = name or os.environ.get("TOOLIDX_MODEL") or s.get("model")
    path = path or os.environ.get("TOOLIDX_MODEL_PATH") or s.get("model_path")
    explicit = explicit or bool(os.environ.get("TOOLIDX_MODEL_PATH") or s.get("model_path"))
    if not name and not path:
        name = indexed
    if name and str(name).lower() in ("none", "off", "false", ""):
        return ModelChoice(None, None, False)
    if not path and remembered_path and Path(remembered_path).is_dir() and (indexed is None or name == indexed):
        path = remembered_path
    card = packaged_models().get(str(name)) if name else None
    if card is None and path:
        path = str(Path(path).expanduser())
        card = read_card(Path(path))
        if card is not None and name and name != card.name:
            raise ModelError(
                f"{path} holds model {card.name!r}, not {name!r}",
                fix=f"use --model {card.name}, or point --model-path at a folder of {name}",
            )
        if card is None:
            return ModelChoice(str(name or MINILM), path, explicit, MINILM if not name else str(name))
    if card is None and not name:
        card = packaged_models().get(DEFAULT_MODEL)
        if card is None:  # a source tree without the model files: the model the default is made from
            return ModelChoice(MINILM, None, explicit, MINILM)
    if card is not None:
        return ModelChoice(card.name, str(card.folder), explicit, card.architecture, card.sha256)
    return ModelChoice(str(name), None, explicit, str(name))


def is_packaged(path: str | None) -> bool:
    return bool(path) and Path(str(path)).resolve().parent == PACKAGED_DIR.resolve()


def cache_dir() -> Path:
    base = os.environ.get("TOOLIDX_CACHE_DIR") or str(Path.home() / ".cache" / "toolidx" / "models")
    return Path(base).expanduser()


def text_hash(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\n{text}".encode()).hexdigest()


def to_blob(vec: Any) -> bytes:
    import numpy as np

    return np.asarray(vec, dtype=np.float32).tobytes()


class FastEmbedder:
    """`te`: fastembed's TextEmbedding, or a function that makes it when a batch of documents first
    needs it (then `one`, the direct query runner, embeds queries: see _direct_query_runner)."""

    def __init__(self, model: str, te: Any, path: str | None = None, sha256: str | None = None, one: Any = None):
        self.model = model
        # the local folder it was loaded from, if any, to be remembered by the index; a packaged
        # model is found by its name (the package may move)
        self.path = None if is_packaged(path) else path
        self.sha256 = sha256
        self._te: Any = None if one is not None else te
        self._make_te: Any = te if one is not None else None
        if one is not None:
            self.dim = len(one("probe"))
            self._one = one
        else:
            probe = next(iter(te.query_embed(["probe"])))
            self.dim = len(probe)
            self._one = _single_query_runner(te, probe)

    def _text_embedding(self) -> Any:
        if self._te is None:
            self._te = self._make_te()
        return self._te

    def embed_documents(self, texts: Sequence[str]) -> list[bytes]:
        return [to_blob(v) for v in self._text_embedding().embed(list(texts), batch_size=BATCH_SIZE)]

    def embed_query(self, text: str) -> bytes:
        if self._one is not None:
            return to_blob(self._one(text))
        return to_blob(next(iter(self._text_embedding().query_embed([text]))))


def _mean_pooled_runner(sess: Any, tok: Any) -> Any:
    """One text through a tokenizer and an ONNX session, mean-pooled and normalised: what fastembed
    computes for its mean-pooled models (all-MiniLM-L6-v2 among them)."""
    import numpy as np

    names = {i.name for i in sess.get_inputs()}

    def run(text: str) -> Any:
        enc = tok.encode_batch([text])[0]
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros_like(ids)
        tokens = sess.run(None, feed)[0][0]
        v = (tokens * mask[0][:, None]).sum(axis=0) / max(int(mask.sum()), 1)
        n = float(np.linalg.norm(v))
        return v / n if n else v

    return run


def _direct_query_runner(folder: str, threads: int | None) -> Any:
    """The query runner of an all-MiniLM-L6-v2-layout folder, loaded with onnxruntime and
    tokenizers alone: importing fastembed (huggingface_hub, its image models) costs 0.5-1 s of a
    server's start, and a search with cached vectors embeds only queries. The tokenizer and session
    are set up as fastembed's load_tokenizer and _load_onnx_model do (truncation, special tokens,
    padding, graph optimisation, threads), so the vectors are fastembed's, byte for byte
    (tests/crawl/test_embed.py). None when the folder has anything this does not read."""
    try:
        import onnxruntime as ort
        from tokenizers import AddedToken, Tokenizer

        d = Path(folder)
        cfg = json.loads((d / "tokenizer_config.json").read_text())
        limits = [v for v in (cfg.get("model_max_length"), cfg.get("max_length")) if type(v) is int and v > 0]
        if not limits or min(limits) > 1 << 20 or not (d / "model.onnx").is_file():
            return None
        tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        direction = cfg.get("truncation_side") or (tok.truncation or {}).get("direction", "right")
        tok.enable_truncation(max_length=min(limits), direction=direction)
        special = d / "special_tokens_map.json"
        for value in json.loads(special.read_text()).values() if special.is_file() else ():
            for token in value if isinstance(value, list) else [value]:
                tok.add_special_tokens([token if isinstance(token, str) else AddedToken(**token)])
        # padding to the batch's longest, never a fixed length (a folder's tokenizer.json may say
        # 128: the padded positions change the vector's last bits)
        padding = tok.padding or {}
        config = json.loads((d / "config.json").read_text()) if (d / "config.json").is_file() else {}
        pad_token = padding.get("pad_token") or cfg.get("pad_token")
        pad_id = padding.get("pad_id", config.get("pad_token_id"))
        pad_id = tok.token_to_id(pad_token) if pad_id is None and pad_token else pad_id
        if pad_token is None or pad_id is None:
            return None
        tok.enable_padding(
            direction=cfg.get("padding_side") or padding.get("direction", "right"),
            pad_id=pad_id,
            pad_type_id=padding.get("pad_type_id", 0),
            pad_token=pad_token,
            pad_to_multiple_of=padding.get("pad_to_multiple_of"),
            length=None,
        )
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = threads
        sess = ort.InferenceSession(str(d / "model.onnx"), providers=["CPUExecutionProvider"], sess_options=so)
    except Exception:  # anything unexpected: fastembed loads it
        return None
    return _mean_pooled_runner(sess, tok)


def _single_query_runner(te: Any, probe: Any) -> Any:
    """One query through fastembed's own tokenizer and ONNX session, mean-pooled and normalised,
    without its batching machinery: 1.2 ms of an 11 ms query embedding. Only for the mean-pooled
    models (all-MiniLM-L6-v2 among them), and only when it gives fastembed's vector for a probe
    text; any other model, or another fastembed layout, uses query_embed."""
    import numpy as np

    try:
        from fastembed.text.pooled_normalized_embedding import PooledNormalizedEmbedding
    except ImportError:
        return None
    impl = getattr(te, "model", None)
    sess, tok = getattr(impl, "model", None), getattr(impl, "tokenizer", None)
    if type(impl) is not PooledNormalizedEmbedding or sess is None or tok is None:
        return None
    run = _mean_pooled_runner(sess, tok)
    try:
        same = float(np.dot(run("probe"), np.asarray(probe))) > 0.99999
    except Exception:  # a layout this code does not know: fastembed's own path is always right
        return None
    return run if same else None


def _hub_reachable(timeout: float = 2.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    try:
        with socket.create_connection(("huggingface.co", 443), timeout=timeout):
            return True
    except OSError:
        return False


# The loaded embedders of this process, by (model, folder, threads): the only embedder cache (a
# query embedder, serve's included, comes from here through search.hybrid.get_query_embedder).
_cache: dict[tuple, Any] = {}


# A query is one short text (~40 tokens): measured on a 2-core box (ONNX Runtime alone, ETOM
# queries, p50), 1 thread 15.5 ms, 2 threads 10.2 ms idle, but 17 vs 23 ms with the other core
# busy (its threads spin-wait). Two threads is the best idle latency; more only add spinning for
# an input this small. Batches of documents (crawl) use every core.
QUERY_THREADS = min(2, os.cpu_count() or 1)


def load_embedder(choice: ModelChoice, *, allow_download: bool = False, threads: int | None = None) -> Embedder | None:
    """The embedder, or None (warned once) when no model can be had. An explicitly configured
    model path that does not load raises ModelError: the user asked for it by name. `threads`:
    ONNX Runtime threads (None: one per core, for batches of documents; QUERY_THREADS for search)."""
    if choice.name is None:
        return None
    key = (choice.name, choice.path, threads)
    if key in _cache:
        if isinstance(_cache[key], ModelError):  # a folder that did not load is not loaded again
            raise _cache[key].with_traceback(None)
        return _cache[key]
    try:
        from loguru import logger

        logger.disable("fastembed")  # its download retries log loudly; we say it once, below
    except ImportError:
        pass
    if importlib.util.find_spec("fastembed") is None:
        warn_once("model", "fastembed is not installed: search is keyword-only")
        return None
    emb = None
    try:
        if choice.path:
            check_model_path(choice)
            path = choice.path

            def text_embedding() -> Any:
                from fastembed import TextEmbedding

                return TextEmbedding(
                    model_name=choice.architecture, specific_model_path=path, local_files_only=True, threads=threads
                )

            one = _direct_query_runner(path, threads) if choice.architecture == MINILM else None
            te = text_embedding if one is not None else text_embedding()
            emb = FastEmbedder(choice.name, te, str(Path(path).resolve()), choice.sha256, one=one)
        else:
            from fastembed import TextEmbedding

            cdir = cache_dir()
            try:
                te = TextEmbedding(model_name=choice.name, cache_dir=str(cdir), local_files_only=True, threads=threads)
            except Exception:
                if not (allow_download and _hub_reachable()):
                    raise
                cdir.mkdir(parents=True, exist_ok=True)
                te = TextEmbedding(model_name=choice.name, cache_dir=str(cdir), threads=threads)
            emb = FastEmbedder(choice.name, te)
    except ModelError:
        raise
    except Exception as e:
        if choice.path:
            _cache[key] = ModelError(
                f"cannot load model {choice.name!r} from {choice.path}: {str(e).splitlines()[0][:200]}",
                fix="check the directory has model.onnx and tokenizer files, and that --model names the model it holds",
            )
            raise _cache[key] from None
        warn_once(
            "model",
            f"embedding model {choice.name!r} is not available offline: no vectors are "
            "made and search is keyword-only; point --model-path (or TOOLIDX_MODEL_PATH) "
            "at a local copy of it, or leave --model unset for toolidx's own model",
        )
    _cache[key] = emb
    return emb


def check_model_path(choice: ModelChoice) -> None:
    """Fail fast (before a crawl contacts any server) when an explicit model folder is unusable."""
    if not choice.path:
        return
    p = Path(choice.path)
    if not p.is_dir():
        raise ModelError(
            f"model directory not found: {choice.path}",
            fix="set --model-path / TOOLIDX_MODEL_PATH to a fastembed model folder",
        )
    if not any(p.glob("*.onnx")) and not any(p.glob("*/*.onnx")):
        raise ModelError(
            f"no .onnx model file in {choice.path}",
            fix="point --model-path at a folder with model.onnx and tokenizer.json",
        )


class LazyEmbedder:
    """An embedder that loads its model on first need. `model` is known without loading, so a
    crawl can tell which texts changed; `get()` loads (or returns None, warned once)."""

    def __init__(self, choice: ModelChoice, *, allow_download: bool = False):
        assert choice.name is not None
        check_model_path(choice)
        self.choice = choice
        self.model = choice.name
        self.sha256 = choice.sha256
        self.allow_download = allow_download
        self._loaded = False
        self._embedder: Embedder | None = None

    def get(self) -> Embedder | None:
        if not self._loaded:
            self._embedder = load_embedder(self.choice, allow_download=self.allow_download)
            self._loaded = True
        return self._embedder
