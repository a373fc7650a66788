"""Page load time of the web console in a real browser at 10,000 tools (issue 35: <= 200 ms warm).

    python benchmarks/console_speed.py [--tools 10000] [--loads 10]

The catalog is search_speed.py's (the real bench tools repeated under distinct server names, with
vectors), served by a real `toolidx serve --http 127.0.0.1:0` (loopback, no token). Debian's
headless Chromium (Selenium, /usr/bin/chromedriver) loads each page `--loads` times after two
warm-up loads; the time is the browser's own Navigation Timing `duration` (request start to the
load event: the server's answer, parsing, CSS and console.js). Prints p50 and max per page, in ms.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from bench_index import embedder
from search_speed import _catalog

PAGES = [
    ("search (empty)", "/"),
    ("search: a query", "/?q=send+a+message+to+a+slack+channel"),
    ("search: a filtered query", "/?q=read+a+file&read_only=true&k=20"),
    ("tool", "/tool?id={tool}"),
    ("servers", "/servers"),
    ("changes", "/changes"),
    ("quarantine", "/quarantine"),
    ("usage", "/usage"),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", type=int, default=10000)
    ap.add_argument("--loads", type=int, default=10)
    a = ap.parse_args()
    db = _catalog(a.tools, embedder())
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolidx", "serve", "--db", str(db), "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        m = re.search(r"MCP at (http://\S+:\d+)/mcp", line)
        assert m, line
        base = m.group(1)

        for _ in range(600):  # the model loads at start: hybrid search waits for it
            if json.loads(urllib.request.urlopen(base + "/healthz").read())["model"] != "loading":
                break
            time.sleep(0.1)
        hits = json.loads(urllib.request.urlopen(base + "/v1/search?q=send+a+message").read())["hits"]
        tool = urllib.parse.quote(hits[0]["id"], safe="")
        print(f"{a.tools} tools, {a.loads} warm loads per page (Chromium, Navigation Timing duration)")
        for name, (p50, worst) in measure(base, [(n, p.format(tool=tool)) for n, p in PAGES], a.loads).items():
            print(f"  {name:28s} p50 {p50:6.1f} ms   max {worst:6.1f} ms")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def measure(base: str, pages: list[tuple[str, str]], loads: int) -> dict[str, tuple[float, float]]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    out = {}
    try:
        for name, path in pages:
            times = []
            for i in range(loads + 2):
                driver.get(base + path)
                ms = driver.execute_script("return performance.getEntriesByType('navigation')[0].duration")
                if i >= 2:  # two warm-up loads: the server's caches, the browser's CSS and JS
                    times.append(float(ms))
            out[name] = (statistics.median(times), max(times))
    finally:
        driver.quit()
    return out


if __name__ == "__main__":
    main()
