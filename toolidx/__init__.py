"""toolidx: one local SQLite index of every MCP tool."""

import os

__version__ = "0.1.0"

# numpy's OpenBLAS starts a thread per core for a matrix product and leaves them spinning after
# it. toolidx's only products are one (tools x 384) matrix times a query vector per search
# (< 1 ms on one core), next to the ONNX model's own thread: on a 2-core machine the spinning
# threads made a hybrid search 2-3x slower (benchmarks/search_speed.py). A value the user set wins;
# it takes effect only if numpy is not imported yet.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
