"""benchmarks/bfcl.py: BFCL's questions become one pooled catalog, each question labelled with the
function its answer calls, whatever category it came from."""

from __future__ import annotations

import json
import sys

from conftest import REPO


def _write(folder, name, rows):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_bfcl_pools_functions_and_labels_each_question(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "benchmarks"))
    import bfcl

    data = tmp_path / "gorilla" / bfcl.DATA
    area = {"name": "area", "description": "Area of a triangle.", "parameters": {"type": "dict", "properties": {}}}
    area2 = {"name": "area", "description": "Area of a circle.", "parameters": {"type": "dict", "properties": {}}}
    hyp = {
        "name": "math.hypot",
        "description": "Hypotenuse.",
        "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}},
    }
    for cat in bfcl.ONE + bfcl.SEVERAL:
        _write(data, f"BFCL_v4_{cat}.json", [])
        _write(data / "possible_answer", f"BFCL_v4_{cat}.json", [])
    _write(
        data,
        "BFCL_v4_multiple.json",
        [
            {
                "id": "m0",
                "question": [[{"role": "user", "content": "area of a circle of radius 2"}]],
                "function": [area, area2],
            },
            {"id": "m1", "question": [[{"role": "user", "content": "no answer for me"}]], "function": [hyp]},
        ],
    )
    _write(data / "possible_answer", "BFCL_v4_multiple.json", [{"id": "m0", "ground_truth": [{"area": {}}]}])
    _write(
        data,
        "BFCL_v4_parallel_multiple.json",
        [
            {
                "id": "p0",
                "question": [[{"role": "user", "content": "triangle area and a hypotenuse"}]],
                "function": [area, hyp],
            },
        ],
    )
    _write(
        data / "possible_answer",
        "BFCL_v4_parallel_multiple.json",
        [{"id": "p0", "ground_truth": [{"area": {}}, {"math.hypot": {}}]}],
    )
    monkeypatch.setattr(bfcl, "CACHE", tmp_path / "cache")

    _rows = bfcl._rows
    out = bfcl.convert(tmp_path / "gorilla")
    tools = _rows(out / "tools.jsonl")
    assert [t["id"] for t in tools] == ["bfcl/area", "bfcl/area~2", "bfcl/math.hypot"]  # one name, two functions
    assert tools[2]["input_schema"]["properties"]["x"]["type"] == "number"  # Python's types read as JSON Schema's
    one = _rows(out / "queries.jsonl")
    several = _rows(out / "queries_multi.jsonl")
    # the first function named "area" is the one its answer calls (BFCL names one per question)
    assert [(q["id"], q["relevant"]) for q in one] == [("m0", ["bfcl/area"])]
    assert [(q["id"], q["relevant"]) for q in several] == [("p0", ["bfcl/area", "bfcl/math.hypot"])]
