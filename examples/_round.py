"""Shared by the two tool-search examples: an index of examples/live.yaml (a live notes server and
the weather tool list), built once into a temporary folder, and a JSON POST for the real APIs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent


def example_index() -> Path:
    """Crawl examples/live.yaml (the notes server runs under this Python) into a temporary index."""
    db = Path(tempfile.mkdtemp(prefix="toolidx-example-")) / "example.db"
    model = ["--model-path", os.environ["TOOLIDX_MODEL_PATH"]] if os.environ.get("TOOLIDX_MODEL_PATH") \
        else ["--model", "none"]
    env = {**os.environ, "PYTHON": sys.executable}
    r = subprocess.run([sys.executable, "-m", "toolidx", "crawl", "--config", str(HERE / "live.yaml"),
                        "--db", str(db), *model], cwd=HERE, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"crawl failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    os.environ["PYTHON"] = sys.executable  # execute_tool starts the notes server the same way
    return db


def post(url: str, headers: dict, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", **headers})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def recorded(name: str) -> dict:
    return json.loads((HERE / "recorded" / name).read_text())
