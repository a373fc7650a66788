"""What search.actions' antonym lexicon marks on every tool name of the bench sets, beside the
negating-prefix rule it replaced (issue 43, Deliver 1d).

    python benchmarks/antonyms.py [--list]

For each tool name word, the request verbs that would mark the tool `opposed` through the pair
rule alone (the action classes, create / delete and the like, are another rule): the new lexicon
(search.actions.ANTONYMS) and the old prefix rule (a word with un- / dis- / de- put in front or
taken off, stem of 3 letters or more), the old one counted only where the other word is English
(search/words.txt) or another tool's name word, so it could come from a request. Prints the counts
of tool names and distinct word pairs each marks, the pairs only the old rule made, and with
`--list` every pair the lexicon marks.
"""

from __future__ import annotations

import argparse
import json
import sys

from _common import BENCH

from toolidx.core.tooldoc import split_name
from toolidx.search import actions, spelling

OLD_PREFIXES = ("un", "dis", "de")


def old_negations(word: str) -> set[str]:
    """The rule before issue 43: any un- / dis- / de- in front of or off a word of 3+ letters."""
    out = {p + word for p in OLD_PREFIXES} if len(word) >= 3 else set()
    out |= {word[len(p) :] for p in OLD_PREFIXES if word.startswith(p) and len(word) - len(p) >= 3}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true", help="print every pair the lexicon marks")
    args = ap.parse_args()
    names: dict[str, set[str]] = {}  # tool name -> its words
    for folder in sorted(p for p in BENCH.iterdir() if (p / "tools.jsonl").is_file()):
        for line in (folder / "tools.jsonl").read_text().splitlines():
            if line.strip():
                t = json.loads(line)
                names[t["name"]] = set(split_name(t["name"]))
    english = spelling._english()[0]
    vocab = english | {w for ws in names.values() for w in ws}
    old: dict[tuple[str, str], set[str]] = {}
    new: dict[tuple[str, str], set[str]] = {}
    for name, words in names.items():
        for w in words:
            for v in old_negations(w) & vocab:
                old.setdefault((v, w), set()).add(name)
            for v in actions._negations(w):
                new.setdefault((v, w), set()).add(name)
    old_names = {n for ns in old.values() for n in ns}
    new_names = {n for ns in new.values() for n in ns}
    print(f"{len(names)} distinct tool names in {BENCH}")
    print(f"old prefix rule: {len(old_names)} names marked by {len(old)} (request word, name word) pairs")
    print(f"antonym lexicon: {len(new_names)} names marked by {len(new)} pairs")
    gone = sorted(set(old) - set(new))
    print(f"pairs only the old rule marked ({len(gone)}):")
    for v, w in gone:
        print(f"  {v!r} / {w!r}: {', '.join(sorted(old[(v, w)])[:4])}")
    if args.list:
        print("pairs the lexicon marks:")
        for v, w in sorted(new):
            print(f"  {v!r} / {w!r}: {', '.join(sorted(new[(v, w)])[:4])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
