"""`loads_json` reads what the database gives back exactly as `json.loads` does, although it
parses with orjson where it can: any JSON value, integers of any size, lone surrogates,
numbers beyond a float's range, as text or as bytes (psycopg hands over bytes)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tablequeue.models import loads_json

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: beyond 64 bits orjson would give a float
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()  # lone surrogates included
)
VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (1 and 1.0 differ; -0.0 and 0.0 too)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


@settings(max_examples=400, deadline=None)
@given(VALUES, st.booleans(), st.booleans())
def test_loads_json_reads_as_json_does(value: Any, ascii_only: bool, as_bytes: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    if as_bytes:
        if not ascii_only:
            text = json.dumps(value)  # a lone surrogate has no UTF-8: escaped, as stored
        given_text: str | bytes = text.encode()
    else:
        given_text = text
    assert same(loads_json(given_text), json.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        "18446744073709551616",  # one past uint64: orjson gives a float
        "-9223372036854775809",  # one below int64
        "-9999999999999999999",  # 19 digits
        '{"a": [1180591620717411303425, 2.5]}',
        "1e400",  # orjson refuses infinity, json gives inf
        '"\\ud800"',  # orjson refuses a lone surrogate
        '{"phone": "12345678901234567890"}',  # 20 digits in a string: json's path, same value
    ],
)
def test_loads_json_edges(text: str) -> None:
    assert same(loads_json(text), json.loads(text))
    assert same(loads_json(text.encode()), json.loads(text))


@pytest.mark.parametrize("value", [5, 2.5, None])
def test_loads_json_refuses_what_is_not_text_as_json_does(value: Any) -> None:
    """SQLAlchemy's SQLite JSON type hands over numbers as they are and relies on the
    TypeError."""
    with pytest.raises(TypeError):
        json.loads(value)
    with pytest.raises(TypeError):
        loads_json(value)
