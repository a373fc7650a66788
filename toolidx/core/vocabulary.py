"""The words the library and every front-end (the CLI, serve's meta-tools, its HTTP API) share, one
definition each, so all of them accept and say the same. The longest query read is
`core.tokens.MAX_QUERY_CHARS`."""

from __future__ import annotations

SEARCH_MODES = ("hybrid", "keyword", "semantic")  # search.hybrid's; messages and reports list them in this order
DETAIL_LEVELS = ("summary", "schema", "full")  # how much of one tool catalog.describe shows
# {"toolidx": JSON_VERSION, "command": NAME, ...}: every --json answer, /v1/search's and serve's
# HTTP errors. It goes up only on an incompatible change; new keys may appear at any time.
JSON_VERSION = 1
