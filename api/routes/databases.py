"""The databases the API serves: what the `database` query parameter of every route names."""

from __future__ import annotations

from fastapi import APIRouter

from ..dependencies import READER, DatabasesArg
from ..schemas import DatabaseOut

router = APIRouter(tags=["databases"])


@router.get("/databases", dependencies=READER)
def list_databases(databases: DatabasesArg) -> list[DatabaseOut]:
    """Each database by name with its engine, the default one first (no connection is made)."""
    return [
        DatabaseOut(name=name, engine=database.dialect.name, default=database is databases.default)
        for name, database in databases
    ]
