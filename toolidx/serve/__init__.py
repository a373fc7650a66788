"""The discovery MCP server: the meta-tools as the agent sees them (`metatools`), the state
behind them (`discovery`: scope, exposed names, reload), backends that run `execute_tool` on the
real servers (`backends`), the MCP wiring (`server`), and what serving saves (`stats`).
"""
