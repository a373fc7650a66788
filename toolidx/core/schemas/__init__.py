"""Reading a tool's JSON Schema: one module per job, and the names the rest of toolidx uses.

- `refs`: the one `$ref` / `allOf` resolver (`resolve`), local JSON pointers only.
- `table`: the flat parameter table people read (`parameter_table`, `type_label`).
- `arguments`: example `arguments` that validate (`example_arguments`).
- `validation`: the one validator factory (`compile_validator`), offline.
- `typed`: typed reads of keywords and JSON value types, shared by the two above.

Schemas in the wild use `$ref`/`$defs`, `anyOf` for optional values (`T | null`), `allOf`
composition, draft-4 boolean `exclusiveMinimum`, regex `pattern`s and `format`s; every function
here follows local refs (with a cycle guard) and never raises on a schema it does not understand.
"""

from .arguments import example_arguments
from .refs import Resolved, is_local_ref, resolve, resolve_ref
from .table import parameter_table, required_params, type_label
from .typed import json_type
from .validation import compile_validator, schema_errors, validate

__all__ = [
    "Resolved",
    "compile_validator",
    "example_arguments",
    "is_local_ref",
    "json_type",
    "parameter_table",
    "required_params",
    "resolve",
    "resolve_ref",
    "schema_errors",
    "type_label",
    "validate",
]
