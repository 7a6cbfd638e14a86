from store_backends import _postgres_session, db_location, postgres_url  # noqa: F401
