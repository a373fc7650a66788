"""The index file: opening it (db), its schema (migrations), and every read and write of it."""

from .db import Database, default_db_path, open_db

__all__ = ["Database", "default_db_path", "open_db"]
