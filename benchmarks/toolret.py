"""Two ToolRet subsets (apibank, gorilla-huggingface; ../shared/train/toolret, no license: measure
only, never train the shipped model on them) as bench sets: catalogs of another style than the MCP
servers search's constants were fitted on (REST-like APIs; Hugging Face models named by their id),
so `models.py` can show whether fusion, calibration and the gate hold where nothing was fitted.

The conversion runs at measure time into the index cache ($TOOLIDX_BENCH_CACHE/toolret/<subset>/,
tools.jsonl and queries.jsonl in the bench sets' format); nothing is copied into the repository.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from _common import CACHE, SHARED

SOURCE = SHARED / "train" / "toolret"
SUBSETS = ("apibank", "gorilla-huggingface")


def _tool(subset: str, doc: dict) -> tuple[str, str, dict]:
    """(name, description, input schema) of one ToolRet tool's documentation"""
    # MCP tool names are [A-Za-z0-9_.-]; gorilla's are model ids such as "facebook/bart-large"
    name = re.sub(r"[^A-Za-z0-9_.-]", ".", str(doc["name"]))
    if subset == "apibank":
        params = doc.get("parameters") if isinstance(doc.get("parameters"), list) else []
        props = {
            str(p["name"]): {"type": "string", "description": str(p.get("description") or "")}
            for p in params
            if isinstance(p, dict) and p.get("name")
        }
        return name, str(doc.get("description") or "").strip('"'), {"type": "object", "properties": props}
    args = doc.get("api_arguments")
    props = {str(k): {"type": "string"} for k in args} if isinstance(args, dict) else {}
    desc = f"{doc.get('functionality')} ({doc.get('domain')}). {doc.get('description') or ''}"
    return name, desc, {"type": "object", "properties": props}


def convert(subset: str) -> Path | None:
    """The subset as a bench set folder (written once), or None when ../shared has no ToolRet."""
    src = SOURCE / subset
    if not (src / "tools.json").is_file():
        return None
    out = CACHE / "toolret" / subset
    if (out / "queries.jsonl").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    ids: dict[str, str] = {}
    with open(out / "tools.jsonl", "w") as f:
        for t in json.loads((src / "tools.json").read_text()):
            name, desc, schema = _tool(subset, t["documentation"])
            ids[t["id"]] = f"{subset}/{name}"
            row = {"id": ids[t["id"]], "server": subset, "name": name, "description": desc, "input_schema": schema}
            f.write(json.dumps(row) + "\n")
    with open(out / "queries.tmp", "w") as f:
        for q in json.loads((src / "queries.json").read_text()):
            rel = [ids[lab["id"]] for lab in q["labels"] if lab["id"] in ids]
            if rel:
                f.write(json.dumps({"id": q["id"], "query": q["query"], "relevant": rel}) + "\n")
    (out / "queries.tmp").rename(out / "queries.jsonl")
    return out
