"""MariaDB (and the `mysql://` scheme): the dialect, its statements, JSON paths and indexes."""
