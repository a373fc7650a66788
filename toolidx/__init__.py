"""toolidx: one local SQLite index of every MCP tool."""

import os

__version__ = "0.1.0"

# numpy's OpenBLAS starts a thread per core for a matrix product and leaves them spinning after
# it, next to the ONNX model's own threads: on a 2-core machine that made a hybrid search 2-3x
# slower (benchmarks/search_speed.py). A search now makes no BLAS product (store/sqlite/matrix.py
# sums each row with einsum), so a host that imported numpy before toolidx, when this no longer
# takes effect, is not slowed either; this keeps any other product of toolidx's on one thread. A
# value the user set wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
