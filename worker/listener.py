"""Moved: the PostgreSQL listener belongs to its dialect (`Dialect.listen`)."""

from tablequeue.dialects.postgresql_listener import listen as listen
