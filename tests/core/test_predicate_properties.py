"""Property-based predicate tests: SQL selects what the Python oracle selects, on every engine.

Hypothesis generates JSON bodies (nested objects and arrays, unicode and quoted strings, negative,
big and fractional numbers, booleans, null, missing keys) and predicates from the whole grammar
(key and index paths, the six comparisons against strings, numbers, true, false and null, `and`,
`or`, `not`, parentheses). The bodies are enqueued once per engine; each predicate then selects
through `Queue.messages(where=...)` and `Queue.count(where=...)`, compared with `holds`, the
reference semantics of tests/core/test_predicate.py. Generation is derandomized, so a run is
repeatable; the example counts keep the file within about a minute over all engines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablequeue import NewMessage, Queue
from tablequeue.predicate import And, Comparison, Not, Or, Predicate, holds, parse, render

pytestmark = pytest.mark.slow

BODY_DRAWS = 12
"""Hypothesis runs drawing a batch of bodies each; every batch joins one pool per engine."""
PREDICATE_EXAMPLES = 300
"""Random predicates checked against the pool on each engine."""

# A few keys shared by bodies and predicates, so paths often exist, sometimes not.
KEYS = ["a", "b", "Sku", "and", "k y", "ключ", 'q"uote', "it's"]
STRINGS = st.one_of(
    st.sampled_from(["", "a", "abc", "B", "123", "z", "é", "Ünïcødé ✓", 'say "hi"', "it's", "\\"]),
    # NUL is refused at enqueue (PostgreSQL cannot store it), so bodies and values leave it out.
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8),
)
# Small numbers make predicates hit; the wide ones stay within doubles' exact integers (2**53).
INTS = st.one_of(st.integers(-3, 3), st.integers(-1000, 1000), st.integers(-(2**53), 2**53))
FLOATS = st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False)
SCALARS = st.one_of(STRINGS, INTS, FLOATS, st.booleans(), st.none())
JSON = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), children, max_size=4),
    ),
    max_leaves=12,
)
BODIES = st.dictionaries(st.sampled_from(KEYS), JSON, max_size=5)

# The grammar starts a path with a key; indexes and keys follow. A quoted key may not hold '"'.
PATH_KEYS = st.sampled_from([key for key in KEYS if '"' not in key])
PATHS = st.tuples(PATH_KEYS, st.lists(st.one_of(PATH_KEYS, st.integers(0, 2)), max_size=2)).map(
    lambda head_rest: (head_rest[0], *head_rest[1])
)


def comparisons() -> st.SearchStrategy[Comparison]:
    ordered = st.tuples(st.sampled_from(["<", ">", "<=", ">="]), st.one_of(STRINGS, INTS, FLOATS))
    equality = st.tuples(st.sampled_from(["==", "!="]), SCALARS)
    return st.builds(
        lambda path, op_value: Comparison(path, *op_value),
        PATHS,
        st.one_of(ordered, equality),
    )


PREDICATES: st.SearchStrategy[Predicate] = st.recursive(
    comparisons(),
    lambda parts: st.one_of(
        st.lists(parts, min_size=2, max_size=3).map(lambda p: And(tuple(p))),
        st.lists(parts, min_size=2, max_size=3).map(lambda p: Or(tuple(p))),
        parts.map(Not),
    ),
    max_leaves=6,
)


def _pool() -> list[dict[str, Any]]:
    """Bodies from several derandomized Hypothesis draws, the same list on every run."""
    pool: list[dict[str, Any]] = []

    @settings(derandomize=True, database=None, max_examples=BODY_DRAWS, deadline=None)
    @given(st.lists(BODIES, min_size=5, max_size=10))
    def draw(bodies: list[dict[str, Any]]) -> None:
        pool.extend(bodies)

    draw()
    return pool


def test_sql_selects_what_the_oracle_selects(make_queue: Callable[..., Queue]) -> None:
    bodies = _pool()
    queue = make_queue("props")
    ids = [e.id for e in queue.enqueue_many([NewMessage(message=b) for b in bodies])]
    stored = dict(zip(ids, bodies, strict=True))
    checked: list[int] = []

    @settings(
        derandomize=True,
        database=None,
        max_examples=PREDICATE_EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(PREDICATES)
    def agrees(predicate: Predicate) -> None:
        # What a user types: the rendered text. The oracle judges the product's own parse of it
        # (which flattens nested `and`s and `or`s); its canonical form parses back to itself.
        text = render(predicate)
        parsed = parse(text)
        assert parse(render(parsed)) == parsed
        expected = {i for i, body in stored.items() if holds(parsed, body)}
        selected = {m.id for m in queue.messages(where=text, limit=len(stored) + 1)}
        assert selected == expected, text
        assert queue.count(where=text) == len(expected), text
        checked.append(len(expected))

    agrees()
    some = sum(1 for n in checked if 0 < n < len(bodies))
    print(f"\n{len(bodies)} bodies, {len(checked)} predicates, {some} selecting some but not all")
    assert some >= len(checked) // 20, "the generated predicates hardly discriminate"
