"""The discovery MCP server: the meta-tools as the agent sees them (`metatools`), the state
behind them (`discovery`: the index and its reloads, the model, scope, exposed names), their answers
(`answers`, one per meta-tool) and the text agents read (`texts`), backends that run `execute_tool` on
the real servers (`backends`), the MCP wiring (`server`), and what serving saves (`stats`).
"""
