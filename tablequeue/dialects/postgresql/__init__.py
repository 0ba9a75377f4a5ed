"""PostgreSQL: the dialect, its arrays per-row source, its listener and JSON indexes."""
