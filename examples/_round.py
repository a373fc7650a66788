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
    """Crawl examples/live.yaml into a temporary index (the notes server runs under the Python
    toolidx runs under: `${TOOLIDX_PYTHON}`)."""
    db = Path(tempfile.mkdtemp(prefix="toolidx-example-")) / "example.db"
    model = ["--model-path", os.environ["TOOLIDX_MODEL_PATH"]] if os.environ.get("TOOLIDX_MODEL_PATH") \
        else ["--model", "none"]
    r = subprocess.run([sys.executable, "-m", "toolidx", "crawl", "--config", str(HERE / "live.yaml"),
                        "--db", str(db), *model], cwd=HERE, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"crawl of examples/live.yaml failed (exit {r.returncode}):\n{r.stderr.strip()}")
    return db


def post(url: str, headers: dict, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", **headers})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def replay_stops(failed: str) -> int:
    """A tool call failed while the model's turns are replayed: the recorded turns that follow
    assume it worked (they say "Done"), so the replay ends here, with exit 1, instead of claiming
    a success that did not happen."""
    print(f"the tool call failed: {failed}\nthe recorded model turns assume it worked: replay stopped",
          file=sys.stderr)
    return 1


def recorded(name: str) -> dict:
    return json.loads((HERE / "recorded" / name).read_text())
