"""Comparing crawls: the pure snapshot diff (`snapshot`), field-level schema compatibility
(`schema`), prompt-injection heuristics (`audit`), and the entry points over an index's
history (`history`). Never writes to the index.
"""
