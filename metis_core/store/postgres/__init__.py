"""The PostgreSQL backend: psycopg 3 with a connection pool, for stores shared by several processes.

`database` adapts a pool to the `Database` protocol (retrying reads once on a lost connection,
naming every failure); `migrations` applies the numbered `schema/NNNN_*.sql` files under an
advisory lock; `sql` holds the statements that are PostgreSQL's own. Needs the `postgres` extra.
"""
