"""A request's embedding: made once per (model, text) and kept for the next searches, and the one
this thread's last search made, which what serve learned (`learned`) and serve's recorder reuse
instead of embedding the request again. Apart from `hybrid` so that `learned`, which hybrid
asks, needs nothing of it."""

from __future__ import annotations

import threading
from typing import Any

_qcache: dict[tuple[int, str], bytes] = {}
_searched = threading.local()  # this thread's last query embedding: search.learned reads the search's own


def embed_query(embedder: Any, text: str) -> bytes:
    key = (id(embedder), text)
    blob = _qcache.get(key)
    if blob is None:
        if len(_qcache) > 2048:
            _qcache.clear()
        blob = _qcache[key] = embedder.embed_query(text)
    _searched.blob = (id(embedder), blob)
    return blob


def last_query_vector(embedder: Any) -> bytes | None:
    """The embedding this thread's last search (gather) made with `embedder`, or None."""
    last = getattr(_searched, "blob", None)
    return last[1] if last is not None and last[0] == id(embedder) else None
