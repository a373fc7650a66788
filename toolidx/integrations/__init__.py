"""toolidx inside other programs: the public Python API (`catalog`: `Catalog`, `LiveCatalog`),
the model APIs' own tool search (`anthropic`: the Messages API's tool_reference blocks; `openai`:
the Responses API's client-executed tool_search; `common`: the tools in scope with API-safe names),
tool search inside other MCP servers (`mcpsdk`, `fastmcp`), and what `toolidx export` writes
(`export`: the deferred tool lists; `openapi`; `codegen` and the `runtime` its Python imports).
They use the search stage for ranking and serve's execute path (scope, validation, timeout) to run
the chosen tool."""
