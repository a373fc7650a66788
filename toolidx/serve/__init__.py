"""The discovery MCP server: the meta-tools as the agent sees them (`metatools`), the state
behind them (`discovery`: the index and its reloads, the model, scope, exposed names), their answers
(`answers`, one per meta-tool, and `run_search`, serve's one search) and the text agents read
(`texts`), backends that run `execute_tool` on the real servers (`backends`, through the one
execute path `execute`; `preflight`: is a tool callable now; `quarantine`: what `--quarantine`
refuses), the MCP wiring (`server`, `mcp_server`, the stdio transport `stdio`), `--http` (`http`:
Streamable HTTP and `/v1/search`; `limits`: its connection limits; `refusals`: its refusals
logged; `access`: the listen address and tokens), the web console (`console`), what each call
leaves in the usage file (`recorder`), and what serving saves (`stats`).
"""
