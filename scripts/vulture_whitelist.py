"""Names vulture cannot see used: the keys of the TypedDicts and result dataclasses that are JSON
documents' bodies (read by json.dumps, never by name). Regenerate: .venv/bin/vulture --make-whitelist, keeping only such keys."""
hints  # unused variable (toolidx/catalog/describe.py:32)
stale_reason  # unused variable (toolidx/catalog/describe.py:38)
parameters  # unused variable (toolidx/catalog/describe.py:45)
output_schema  # unused variable (toolidx/catalog/describe.py:47)
icons  # unused variable (toolidx/catalog/describe.py:49)
example_valid  # unused variable (toolidx/catalog/describe.py:53)
example_problem  # unused variable (toolidx/catalog/describe.py:54)
first_seen  # unused variable (toolidx/catalog/describe.py:56)
updated_at  # unused variable (toolidx/catalog/describe.py:57)
next_page  # unused variable (toolidx/catalog/listing.py:41)
crawled_at  # unused variable (toolidx/catalog/listing.py:63)
likely_duplicate  # unused variable (toolidx/catalog/similar.py:124)
duplicates  # unused variable (toolidx/catalog/similar.py:134)
max_tool_tokens  # unused variable (toolidx/serve/stats.py:27)
tool_tokens  # unused variable (toolidx/serve/stats.py:35)
meta_tokens  # unused variable (toolidx/serve/stats.py:37)
saved_tokens  # unused variable (toolidx/serve/stats.py:38)
saving_pct  # unused variable (toolidx/serve/stats.py:39)
success_rate  # unused variable (toolidx/catalog/listing.py, catalog/metrics.py: usage in JSON)
last_used  # unused variable (toolidx/catalog/listing.py, catalog/metrics.py)
p50_ms  # unused variable (toolidx/catalog/metrics.py)
p95_ms  # unused variable (toolidx/catalog/metrics.py)
outcomes  # unused variable (toolidx/catalog/metrics.py)
missing_vectors  # unused variable (toolidx/crawl/combine.py:31)
embed_model  # unused variable (toolidx/crawl/combine.py:32)
embed_dim  # unused variable (toolidx/crawl/combine.py:33)
requested  # unused variable (toolidx/serve/preflight.py:26): a JSON key of toolidx check
launch_differs  # unused variable (toolidx/crawl/combine.py): a JSON key of toolidx merge
approvals_dropped  # unused variable (toolidx/crawl/combine.py): a JSON key of toolidx merge
other_configs_servers  # unused variable (toolidx/store/crawls.py): a JSON key of toolidx crawl
do_GET  # unused method (tests/conftest.py): http.server calls its handler's methods by name
do_POST  # unused method (tests/crawl/test_folder_configs.py): http.server calls its handler's methods by name
log_message  # unused method (tests/conftest.py): http.server's logging hook, silenced
latency_ms  # unused variable (toolidx/search/eval.py:238)
infeasible_path  # unused variable (toolidx/search/eval.py:254)
binary_location  # unused attribute (tests/serve/test_console.py, benchmarks/console_speed.py): Selenium reads ChromeOptions' browser path
_make_search_tool  # unused method (toolidx/integrations/fastmcp.py): FastMCP's BaseSearchTransform calls it
_search  # unused method (toolidx/integrations/fastmcp.py): BaseSearchTransform's search hook
graph_optimization_level  # unused attribute (toolidx/core/embedding.py): onnxruntime SessionOptions, read by the session
intra_op_num_threads  # unused attribute (toolidx/core/embedding.py): onnxruntime SessionOptions
inter_op_num_threads  # unused attribute (toolidx/core/embedding.py): onnxruntime SessionOptions
reads_only  # unused variable (toolidx/search/hybrid.py): Signals field, read by to_json through getattr
__signature__  # unused attribute (toolidx/cli/main.py): inspect.signature reads it, as typer does
__annotations__  # unused attribute (toolidx/cli/main.py): typing.get_type_hints reads it, as typer does
