"""The predicate language: `Product.Sku == "123" and not (Qty < 5 or Tags[0] == null)`.

`parse` turns the text a user typed into a small AST and `to_sql` compiles that AST into an
SQLAlchemy boolean expression over a JSON column, using only the `Dialect` JSON primitives, so a
predicate selects the same rows on every engine. Values are always bound parameters.

Semantics: `==` matches values of the same JSON kind (numbers numerically, so `5 == 5.0`);
`p == null` matches a missing property or JSON null; `!=` is exactly `not ==`; the ordering
operators match only strings against strings and numbers against numbers. Every comparison is
two-valued (never SQL NULL), so `not` and `or` behave as written.
"""

from __future__ import annotations

import functools
import json
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from .dialects import Dialect, JsonKind
from .errors import PredicateError

MAX_LENGTH = 4000
MAX_DEPTH = 50
OPERATORS = ("==", "!=", "<", ">", "<=", ">=")
_ORDERING = frozenset({"<", ">", "<=", ">="})
_KEYWORDS = frozenset({"and", "or", "not", "true", "false", "null"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT64 = 2**63
_MAX_INDEX = 2**31 - 1

Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Comparison:
    path: tuple[str | int, ...]
    op: str
    value: Scalar

    def __str__(self) -> str:
        return render(self)


@dataclass(frozen=True)
class And:
    parts: tuple[Predicate, ...]

    def __str__(self) -> str:
        return render(self)


@dataclass(frozen=True)
class Or:
    parts: tuple[Predicate, ...]

    def __str__(self) -> str:
        return render(self)


@dataclass(frozen=True)
class Not:
    part: Predicate

    def __str__(self) -> str:
        return render(self)


Predicate = Comparison | And | Or | Not

_GRAMMAR = r"""
?start: disjunction
?disjunction: conjunction (_OR conjunction)*
?conjunction: negation (_AND negation)*
?negation: NOT negation -> negation
         | "(" disjunction ")"
         | comparison
comparison: path OP value
path: (NAME | key) (_DOT NAME | key | index)*
key: "[" STRING "]"
index: "[" INDEX "]"
value: STRING | NUMBER | TRUE | FALSE | NULL

_OR.2: /or\b/i
_AND.2: /and\b/i
NOT.2: /not\b/i
TRUE.2: /true\b/i
FALSE.2: /false\b/i
NULL.2: /null\b/i
OP: "==" | "!=" | "<=" | ">=" | "<" | ">"
_DOT: "."
NAME: /[A-Za-z_][A-Za-z0-9_]*/
INDEX: /[0-9]+/
NUMBER: /[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/
STRING: /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/s
%ignore /[ \t\r\n]+/
"""


@functools.cache
def _parser() -> Lark:
    """Made at the first parse, not at import: building the LALR tables takes about 80 ms, which
    every `tablequeue` command and worker start paid, most of them never parsing a predicate."""
    return Lark(_GRAMMAR, parser="lalr", lexer="contextual", maybe_placeholders=False)


_EXPECTED = [  # (terminal that identifies the parser state, what the user should write there)
    ("OP", "a comparison operator (==, !=, <, >, <=, >=)"),
    ("NUMBER", "a value"),
    ("INDEX", "an array index or a quoted key"),
    ("RSQB", "']'"),
    ("NAME", "a property name"),
    ("RPAR", "'and', 'or' or ')'"),
    ("_AND", "'and' or 'or'"),
]
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.S)
_SIMPLE_ESCAPES = {
    '"': '"', "'": "'", "\\": "\\", "/": "/",
    "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
}  # fmt: skip
_STRING = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'""", re.S)


def _column(token: Token) -> int:
    return (token.start_pos or 0) + 1


def _error(column: int | None, problem: str) -> PredicateError:
    where = f" at column {column}" if column is not None else ""
    return PredicateError(f"invalid predicate{where}: {problem}")


# --- parsing ---------------------------------------------------------------------------------


def parse(text: str) -> Predicate:
    """Parse a predicate; any problem raises `PredicateError` with a one-line message."""
    if len(text) > MAX_LENGTH:
        raise PredicateError(f"invalid predicate: longer than {MAX_LENGTH} characters")
    if not text.strip():
        raise PredicateError("invalid predicate: empty")
    too_deep = _parens(text)[1]
    if too_deep is not None:
        raise _error(too_deep + 1, f"nested more than {MAX_DEPTH} levels deep")
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(text, e) from None
    except LarkError:  # pragma: no cover - lark raises UnexpectedInput for every input problem
        raise PredicateError("invalid predicate") from None
    _check_depth(tree)
    return _build(tree)


def parse_path(text: str) -> tuple[str | int, ...]:
    """A property path as predicates write it (`Product.Sku`, `Items[0].Qty`, `["odd key"]`)."""
    if not isinstance(text, str) or not text.strip():
        raise PredicateError("invalid path: empty")
    try:
        parsed = parse(f"{text} == null")
    except PredicateError as e:
        raise PredicateError(f"invalid path {text[:80]!r}: {e}") from None
    if not isinstance(parsed, Comparison) or parsed.op != "==" or parsed.value is not None:
        raise PredicateError(
            f"invalid path {text[:80]!r}: expected a property path like Product.Sku"
        )
    return parsed.path


def render_path(path: tuple[str | int, ...]) -> str:
    """The canonical text of a path; `parse_path(render_path(p)) == p`."""
    return "".join(_segment(s, first=i == 0) for i, s in enumerate(path))


def _syntax_error(text: str, e: UnexpectedInput) -> PredicateError:
    if isinstance(e, UnexpectedCharacters):
        pos = e.pos_in_stream or 0
        if text[pos] in "\"'":
            return _error(pos + 1, "unterminated string")
        return _error(pos + 1, f"unexpected {_snippet(text, pos)!r}")
    if isinstance(e, UnexpectedToken):
        token = e.token
        expected = next((what for name, what in _EXPECTED if name in e.expected), None)
        if token.type == "$END":  # lark gives the end the position of the last token
            if "RPAR" in e.expected and (opened := _parens(text)[0]):
                return PredicateError(f"invalid predicate: unclosed '(' at column {opened[-1] + 1}")
            last = text[token.start_pos : token.end_pos]
            return PredicateError(
                f"invalid predicate: expected {expected or 'more'} after {last!r}"
                f" at column {_column(token)}"
            )
        problem = f"unexpected {_snippet(text, _column(token) - 1)!r}"
        return _error(_column(token), problem + (f", expected {expected}" if expected else ""))
    return PredicateError("invalid predicate")  # pragma: no cover


def _snippet(text: str, pos: int) -> str:
    """The word, comment opener or character at `pos`, for error messages."""
    if word := re.match(r"[A-Za-z0-9_.+-]*[A-Za-z0-9_]|--|/\*|[=!<>]=?", text[pos:]):
        return word.group()[:30]
    return text[pos]


def _parens(text: str) -> tuple[list[int], int | None]:
    """Positions of the '(' left open, and of the first '(' nested deeper than allowed."""
    opened: list[int] = []
    too_deep = None
    pos = 0
    while pos < len(text):
        if text[pos] in "\"'" and (string := _STRING.match(text, pos)):
            pos = string.end()
            continue
        if text[pos] == "(":
            opened.append(pos)
            if len(opened) > MAX_DEPTH and too_deep is None:
                too_deep = pos
        elif text[pos] == ")" and opened:
            opened.pop()
        pos += 1
    return opened, too_deep


def _check_depth(tree: Tree[Token]) -> None:
    """Refuse deep nesting before anything recurses over the tree."""
    stack: list[tuple[Tree[Token], int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if node.data in ("disjunction", "conjunction", "negation"):
            depth += 1
            if depth > MAX_DEPTH:
                column = _first_column(node)
                raise _error(column, f"nested more than {MAX_DEPTH} levels deep")
            stack.extend((child, depth) for child in node.children if isinstance(child, Tree))


def _first_column(tree: Tree[Token]) -> int:
    for token in tree.scan_values(lambda v: isinstance(v, Token)):
        return _column(token)
    return 1  # pragma: no cover


def _build(tree: Tree[Token]) -> Predicate:
    if tree.data == "comparison":
        return _comparison_node(tree)
    parts = [_build(child) for child in tree.children if isinstance(child, Tree)]
    if tree.data == "negation":
        return Not(parts[0])
    kind = Or if tree.data == "disjunction" else And  # (a and b) and c is a and b and c
    return kind(tuple(p for part in parts for p in (part.parts if type(part) is kind else [part])))


def _comparison_node(tree: Tree[Token]) -> Comparison:
    path_tree, op, value_tree = tree.children
    assert isinstance(path_tree, Tree) and isinstance(op, Token) and isinstance(value_tree, Tree)
    token = value_tree.children[0]
    assert isinstance(token, Token)
    value = _value(token)
    _check_comparison(str(op), value, _column(token))
    return Comparison(_path(path_tree), str(op), value)


def _path(tree: Tree[Token]) -> tuple[str | int, ...]:
    path: list[str | int] = []
    for child in tree.children:
        if isinstance(child, Token):  # NAME
            if not path and child.lower() in _KEYWORDS:
                raise _error(
                    _column(child),
                    f"{str(child)!r} is a keyword; write [{json.dumps(str(child))}] for a property",
                )
            path.append(str(child))
            continue
        token = child.children[0]
        assert isinstance(token, Token)
        column = _column(token)
        if child.data == "index":
            if int(token) > _MAX_INDEX:
                raise _error(column, f"array index {token} is too large")
            path.append(int(token))
        else:
            key = _unquote(token)
            if '"' in key or any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
                raise _error(column, "a quoted key may not contain '\"' or control characters")
            path.append(key)
    return tuple(path)


def _value(token: Token) -> Scalar:
    column = _column(token)
    if token.type == "STRING":
        value = _unquote(token)
        if "\x00" in value:
            raise _error(column, "strings may not contain NUL (\\u0000)")
        return value
    if token.type == "NUMBER":
        if re.fullmatch(r"[+-]?[0-9]+", token):
            number = int(token)
            if not -_INT64 <= number < _INT64:
                raise _error(column, f"integer {token} is out of range")
            return number
        floating = float(token)
        if not math.isfinite(floating):
            raise _error(column, f"number {token} is out of range")
        return floating
    return {"TRUE": True, "FALSE": False, "NULL": None}[token.type]


def _unquote(token: Token) -> str:
    """Decode a quoted string with JSON escapes (plus \\'); reject raw control characters."""
    start = _column(token)
    body = str(token)[1:-1]
    for offset, char in enumerate(body):
        if ord(char) < 0x20:
            raise _error(start + 1 + offset, "control character in string; use an escape like \\n")

    def escape(match: re.Match[str]) -> str:
        code = match.group(1)
        if len(code) == 5:
            return chr(int(code[1:], 16))
        if code in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[code]
        raise _error(start + 1 + match.start(), f"invalid escape {match.group()!r} in string")

    decoded = _ESCAPE.sub(escape, body)
    try:  # join \\uD83D\\uDE00 surrogate pairs; refuse lone surrogates
        return decoded.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        raise _error(start, "invalid \\u escape: unpaired surrogate") from None


def _check_comparison(op: str, value: Scalar, column: int | None) -> None:
    if op not in OPERATORS:
        raise _error(column, f"unknown operator {op!r}")
    if op in _ORDERING and _kind(value) not in ("string", "number"):
        raise _error(column, f"{op!r} needs a number or string, not {render_value(value)}")


# --- rendering -------------------------------------------------------------------------------


def render(predicate: Predicate) -> str:
    """The canonical text of a predicate; `parse(render(p)) == p` for every parsed `p`."""
    if isinstance(predicate, Comparison):
        return f"{render_path(predicate.path)} {predicate.op} {render_value(predicate.value)}"
    if isinstance(predicate, Not):
        inner = predicate.part
        text = render(inner)
        return f"not ({text})" if isinstance(inner, And | Or) else f"not {text}"
    word = " and " if isinstance(predicate, And) else " or "
    wrap = (And, Or) if isinstance(predicate, And) else (Or,)
    return word.join(
        f"({render(p)})" if isinstance(p, wrap) else render(p) for p in predicate.parts
    )


def render_value(value: Scalar) -> str:
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def _segment(segment: str | int, first: bool) -> str:
    if isinstance(segment, int):
        return f"[{segment}]"
    if _NAME.fullmatch(segment) and not (first and segment.lower() in _KEYWORDS):
        return segment if first else f".{segment}"
    return f"[{json.dumps(segment, ensure_ascii=False)}]"


# --- compiling -------------------------------------------------------------------------------


IndexLookup = Callable[
    [tuple[str | int, ...], JsonKind, str, Scalar], "sa.ColumnElement[bool] | None"
]
"""An index's condition for `path op value` (every matching row satisfies it), or None."""


def to_sql(
    predicate: Predicate,
    column: sa.ColumnElement[Any],
    dialect: Dialect,
    indexed: IndexLookup | None = None,
) -> sa.ColumnElement[bool]:
    """A boolean SQL expression, never NULL, true for the rows whose `column` matches.

    With `indexed` (the queue's JSON indexes, `tablequeue.indexes`), a comparison on an
    indexed path that must hold for the whole predicate to hold (not under `not`, and not
    `!=`) also gets the index's condition, `indexed_expression op key`, ANDed to it: written
    exactly as the index was built, so the engine's planner finds the index."""
    if isinstance(predicate, Comparison):
        return _comparison(predicate, column, dialect, indexed)
    if isinstance(predicate, Not):
        return sa.not_(to_sql(predicate.part, column, dialect))
    parts = [to_sql(part, column, dialect, indexed) for part in predicate.parts]
    if not parts:
        raise PredicateError(f"invalid predicate: empty {type(predicate).__name__}")
    return sa.and_(*parts) if isinstance(predicate, And) else sa.or_(*parts)


def _comparison(
    comparison: Comparison,
    column: sa.ColumnElement[Any],
    dialect: Dialect,
    indexed: IndexLookup | None = None,
) -> sa.ColumnElement[bool]:
    op, value, path = comparison.op, comparison.value, comparison.path
    _check_comparison(op, value, None)
    if not path:
        raise PredicateError("invalid predicate: a comparison needs a property path")
    kind = _kind(value)
    if kind is None:
        matched: sa.ColumnElement[Any] = dialect.json_is_null(column, path)
    else:
        assert value is not None
        left = dialect.json_scalar(column, path, kind)
        matched = _SQL_OPERATORS["==" if op == "!=" else op](left, _bind(value, kind))
    two_valued = dialect.is_true(matched)
    if op == "!=":
        return sa.not_(two_valued)
    narrowed = indexed(path, kind, op, value) if indexed and kind else None
    return two_valued if narrowed is None else sa.and_(narrowed, two_valued)


def sql_operator(op: str) -> Callable[[Any, Any], sa.ColumnElement[Any]]:
    """The SQLAlchemy operator of an ordering or equality operator of the language."""
    return _SQL_OPERATORS[op]


def _kind(value: Scalar) -> JsonKind | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    raise PredicateError(f"invalid predicate: unsupported value {value!r}")


_SQL_OPERATORS: dict[str, Callable[[Any, Any], sa.ColumnElement[Any]]] = {
    "==": operator.eq,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


def _bind(value: str | int | float | bool, kind: JsonKind) -> sa.BindParameter[Any]:
    if kind == "number":  # BIGINT or FLOAT: an int bound as INTEGER would overflow on PostgreSQL
        return sa.literal(value, sa.BigInteger() if isinstance(value, int) else sa.Float())
    return sa.literal(value, sa.Text() if kind == "string" else sa.Boolean())


# --- evaluated in Python ---------------------------------------------------------------------
# What `to_sql` selects on every engine, decided for one body without a database (publish
# filters a body before it is stored). tests/core/test_predicate_properties.py checks that SQL
# selects exactly what `holds` selects, on every engine.

MISSING = object()

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge,
}  # fmt: skip


def _lookup(body: Any, path: tuple[str | int, ...]) -> Any:
    for segment in path:
        if isinstance(segment, int):
            if not isinstance(body, list) or segment >= len(body):
                return MISSING
            body = body[segment]
        else:
            if not isinstance(body, dict) or segment not in body:
                return MISSING
            body = body[segment]
    return body


def json_kind(value: Any) -> str:
    if value is None or value is MISSING:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {int: "number", float: "number", str: "string"}.get(type(value), "other")


def holds(predicate: Predicate, body: Any) -> bool:
    """Whether a JSON body (as `json.loads` returns it) matches the predicate."""
    if isinstance(predicate, And):
        return all(holds(p, body) for p in predicate.parts)
    if isinstance(predicate, Or):
        return any(holds(p, body) for p in predicate.parts)
    if isinstance(predicate, Not):
        return not holds(predicate.part, body)
    actual = _lookup(body, predicate.path)
    same_kind = json_kind(actual) == json_kind(predicate.value)
    if predicate.op == "!=":
        return not (same_kind and (predicate.value is None or actual == predicate.value))
    return same_kind and (predicate.value is None or _OPS[predicate.op](actual, predicate.value))


def as_stored(body: Any) -> Any:
    """A body as the database stores it and returns it (JSON types only: tuples are arrays)."""
    return json.loads(json.dumps(body, allow_nan=False))
