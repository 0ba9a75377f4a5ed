"""SQLite: the dialect and its JSON indexes."""
