"""`toolidx export`: the deferred tool list of an index, in a model API's own shape, for builders
who keep it in their code (and run the search themselves, or use the API's hosted search).

- anthropic: Messages API `tools` entries `{"name", "description", "input_schema",
  "defer_loading": true}`, names API-safe (`server__tool`);
- openai: Responses API namespaces (fewer than 10 functions each) of full function definitions
  with `defer_loading: true`.

- openapi: an OpenAPI 3.1 document, one `POST /tools/{server}/{tool}` operation per tool
  (`openapi.py`);
- python / typescript: typed wrapper modules whose functions run the tools through toolidx's
  execute path (`codegen.py`).

`names` maps each exported name back to its toolidx id (openai: `namespace.function`; openapi:
the operationId; python / typescript: the function name).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from ..core.filters import Filters
from .anthropic import AnthropicToolSearch
from .common import ToolCatalog
from .openai import OpenAIToolSearch

FORMATS = ("anthropic", "openai", "openapi", "python", "typescript")
TEXT_FORMATS = ("python", "typescript")  # written as code, not JSON


@dataclass
class ExportResult:
    """What `export_tools` returns (`to_json()`: the `export --json` document's body). One of
    `tools` (anthropic, openai), `document` (openapi) or `code` (python, typescript) is set."""

    format: str
    count: int
    names: dict[str, str]  # exported name -> toolidx id
    tools: list[dict[str, Any]] | None = None
    document: dict[str, Any] | None = None
    code: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": self.format, "count": self.count}
        for key in ("code", "document", "tools"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["names"] = self.names
        return out

    def text(self) -> str:
        """What `export` writes without --json: the module's code, or the document / tool list as JSON."""
        if self.code is not None:
            return self.code
        return (
            json.dumps(self.document if self.document is not None else self.tools, ensure_ascii=False, indent=2) + "\n"
        )


def export_tools(db_path: str | Path, fmt: str, filters: Filters | None = None) -> ExportResult:
    """The tools in scope of `db_path` in format `fmt` (FORMATS)."""
    fmt = (fmt or "").strip().lower()
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r}", fix="use one of: " + ", ".join(FORMATS))
    catalog = ToolCatalog(db_path, scope=filters, embedder=None)
    if fmt in TEXT_FORMATS:
        from . import codegen

        db = str(Path(db_path).resolve())
        code, names = codegen.python_module(catalog, db) if fmt == "python" else codegen.typescript_module(catalog, db)
        return ExportResult(fmt, len(catalog), names, code=code)
    if fmt == "openapi":
        from .openapi import openapi_document

        doc, names = openapi_document(catalog)
        return ExportResult(fmt, len(catalog), names, document=doc)
    if fmt == "anthropic":
        tools = AnthropicToolSearch(catalog).deferred_tools()
        names = {n: i for i, n in catalog.names.items()}
    else:
        oa = OpenAIToolSearch(catalog)
        tools = oa.namespaces()
        names = {f"{ns}.{fn}": i for i, (ns, fn) in oa.place.items()}
    return ExportResult(fmt, len(catalog), names, tools=tools)
