"""Write toolidx/search/words.txt, the words toolidx.search.spelling takes as English (never a slip,
and what a slip may be searched as), each with its stem as the keyword index cuts it (FTS5's
porter tokenizer), so that an inflection the list lacks ("pasted", "renting") is known by its stem:

- the whole, lowercase, alphabetic entries of all-MiniLM-L6-v2's WordPiece vocabulary
  (bert-base-uncased's, Apache-2.0; read from the packaged model's tokenizer.json);
- the words of tool catalogs that vocabulary lacks ("delete", "screenshot", "spreadsheet",
  "json"): those in at least MIN_TOOLS tools' names or descriptions of the catalogs toolidx's model
  was trained on, ETOM's (MIT) and MetaTool's plugins (MIT), read from ../shared when it is there.
  Never the test catalogs' (LiveMCPBench's): their words would make a slip's neighbour known there.

    python scripts/words.py
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO))

MIN_TOOLS = 3
# a plain lowercase word, as toolidx.search.spelling reads a request
_WORD = re.compile(r"(?<![\w.'/@:#-])[a-z]{4,}(?![\w'/@#-]|[.:-][\w/])")


def catalog_words() -> Counter:
    """How many tools of the training catalogs have each plain word (name or description)."""
    from toolidx.core.tokens import split_name

    texts: list[str] = []
    etom = SHARED / "bench" / "etom" / "tools.jsonl"
    if etom.is_file():
        for line in etom.read_text().splitlines():
            t = json.loads(line)
            texts.append(" ".join(split_name(str(t.get("name") or ""))) + " " + str(t.get("description") or ""))
    metatool = SHARED / "train" / "metatool" / "plugin_des.json"
    if metatool.is_file():
        texts += [f"{name} {desc}" for name, desc in json.loads(metatool.read_text()).items()]
    if not texts:
        sys.exit(f"no training catalogs under {SHARED}: the list would lose their words")
    return Counter(w for text in texts for w in set(_WORD.findall(text)))


def main() -> int:
    from toolidx.store.keywords import fts_create_sql
    from toolidx.store.retrieval import scratch_create, scratch_tokens
    from toolidx.store.sqlite.file import sqlite_module

    vocab = json.loads((REPO / "toolidx/models/tool-minilm-l6/tokenizer.json").read_text())["model"]["vocab"]
    english = {w for w in vocab if re.fullmatch("[a-z]{2,}", w)}
    extra = {w for w, n in catalog_words().items() if n >= MIN_TOOLS} - english
    words = sorted(english | extra)
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
    print(f"{len(english)} words of the model's vocabulary and {len(extra)} of tool catalogs -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
