"""Write toolidx/search/words.txt, the English words toolidx.search.spelling never corrects: the
whole, lowercase, alphabetic entries of all-MiniLM-L6-v2's WordPiece vocabulary (bert-base-uncased's,
Apache-2.0; read from the packaged model's tokenizer.json), each with its stem as the keyword index
cuts it (FTS5's porter tokenizer), so that an inflection the vocabulary lacks ("pasted", "renting",
"readability") is known by its stem.

    python scripts/words.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    from toolidx.store.db import sqlite_module
    from toolidx.store.keywords import fts_create_sql
    from toolidx.store.retrieval import scratch_create, scratch_tokens

    vocab = json.loads((REPO / "toolidx/models/tool-minilm-l6/tokenizer.json").read_text())["model"]["vocab"]
    words = sorted(w for w in vocab if re.fullmatch("[a-z]{2,}", w))
    conn = sqlite_module().connect(":memory:")
    scratch_create(conn, fts_create_sql())
    stem: dict[int, str] = {}
    for i, t in scratch_tokens(conn, words):
        stem.setdefault(int(i), t)
    out = REPO / "toolidx/search/words.txt"
    with open(out, "w") as f:
        f.write("# English words, and a stem where it differs: written by scripts/words.py (see there)\n")
        for i, w in enumerate(words):
            f.write(w if stem.get(i, w) == w else f"{w} {stem[i]}")
            f.write("\n")
    print(f"{len(words)} words -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
