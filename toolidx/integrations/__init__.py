"""Adapters for the model APIs' own tool search: toolidx as the custom, client-side search of the
Anthropic Messages API (tool_reference blocks) and of the OpenAI Responses API (client-executed
tool_search), plus the deferred tool lists `toolidx export` writes. They use the search stage for
ranking and serve's execute path (scope, validation, timeout) to run the chosen tool."""
