"""The SQLite backend: one file, WAL mode, `BEGIN IMMEDIATE` transactions, `PRAGMA user_version`.

`connection` opens and tunes the file and names SQLite's failures; `migrations` holds the
numbered steps; `sql` the statements that are SQLite's own; `database` adapts it all to the
`Database` protocol of `store/backend.py`.
"""
