"""Storage: SQLAlchemy tables, the store (one transaction per batch), bulk SQL, compaction, Alembic migrations."""
