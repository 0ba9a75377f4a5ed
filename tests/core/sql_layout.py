"""The layout of the golden SQL files: one clause a line, by changing whitespace only.

`layout(sql)` puts each clause of a query (SELECT, FROM, WHERE, ORDER BY, LIMIT, FOR UPDATE,
RETURNING, SET, ON CONFLICT, WHEN MATCHED, ...) on a line of its own, the assignments of a SET
and the ANDs of a WHERE each on their own line, and indents subqueries under the line that
opens them. It only ever replaces a run of whitespace outside quotes by another,
never adds whitespace between two characters that touch and never removes a run: the words of
the result are the words of the input, so `normalized(layout(sql)) == normalized(sql)` and
`git diff --word-diff` of a re-laid golden file shows no change.

`normalized(sql)` is the other half of the golden test's proof: every run of whitespace outside
quotes becomes one space. The golden test compares both the laid-out text and the normalized
one, so a layout bug cannot hide a change of the SQL itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A quoted literal or identifier ('...', "...", `...`; a doubled quote inside is part of it), a
# run of whitespace, a word, or any other single character.
_TOKEN = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\s+|\w+|.""", re.S)

# Where a new line starts inside a query, longest first; `VALUES(` (MariaDB's function) is not
# the VALUES clause.
_CLAUSE = re.compile(
    r"(?:ON DUPLICATE KEY UPDATE|WHEN NOT MATCHED|WHEN MATCHED|ON CONFLICT|DO UPDATE|DO NOTHING"
    r"|(?:LEFT |RIGHT |FULL |INNER |CROSS )?(?:OUTER )?JOIN|STRAIGHT_JOIN|GROUP BY|ORDER BY"
    r"|FOR UPDATE|FOR SHARE|UNION ALL|UNION|EXCEPT|INTERSECT|SELECT|FROM|WHERE|HAVING|LIMIT"
    r"|OFFSET|FETCH|RETURNING|OUTPUT|SET|USING)\b|VALUES(?=\s)"
)
_LISTS = {"SET", "ON DUPLICATE KEY UPDATE"}  # one assignment a line
_CONDITIONS = {"WHERE", "HAVING"}  # one AND a line
_QUERY_START = {"SELECT", "WITH"}  # a parenthesis opened on these holds a query
INDENT = 4


@dataclass
class _Level:
    """One parenthesis (or the statement itself): a query, laid out, or an expression, kept."""

    query: bool
    base: int  # the indentation of this query's clauses
    line: int  # the indentation of the line this level began last (or its parent's, if none)
    clause: str = ""
    cases: int = 0  # CASE ... END open at this level
    ors: bool = False  # an OR at this level: its ANDs stay on their line (precedence shows)
    parts: list[str] = field(default_factory=list)


def normalized(sql: str) -> str:
    """`sql` with each run of whitespace outside quotes made one space, and none at the ends."""
    return "".join(" " if t.isspace() else t for t in _TOKEN.findall(sql.strip()))


def layout(sql: str) -> str:
    """`sql` laid out one clause a line; only whitespace between tokens changes."""
    tokens = _TOKEN.findall(sql)
    with_or = _levels_with_or(tokens)
    levels = [_Level(query=True, base=0, line=0, ors=-1 in with_or)]
    out: list[str] = []
    for n, token in enumerate(tokens):
        level = levels[-1]
        if token.isspace():
            before = tokens[n - 1] if n else ""
            out.append(_whitespace(token, before, sql_after(tokens, n + 1), level))
            continue
        out.append(token)
        if token == "(":
            following = next((t for t in tokens[n + 1 :] if not t.isspace()), "")
            query = following.upper() in _QUERY_START
            clause = following.upper() if query else ""
            base = level.line + INDENT if query else level.base
            levels.append(_Level(query, base, line=level.line, clause=clause, ors=n in with_or))
        elif token == ")" and len(levels) > 1:
            levels.pop()
        elif token.upper() == "CASE":
            level.cases += 1
        elif token.upper() == "END" and level.cases:
            level.cases -= 1
    return "".join(out)


def _levels_with_or(tokens: list[str]) -> set[int]:
    """The levels (by the index of their opening parenthesis; -1: the statement) with an OR of
    their own, outside CASE: `a AND b OR c` split at the AND would read as `a AND (b OR c)`."""
    found: set[int] = set()
    stack = [[-1, 0]]  # [the level's parenthesis, its CASEs open]
    for n, token in enumerate(tokens):
        word = token.upper()
        if token == "(":
            stack.append([n, 0])
        elif token == ")" and len(stack) > 1:
            stack.pop()
        elif word == "CASE":
            stack[-1][1] += 1
        elif word == "END" and stack[-1][1]:
            stack[-1][1] -= 1
        elif word == "OR" and not stack[-1][1]:
            found.add(stack[-1][0])
    return found


def sql_after(tokens: list[str], start: int, length: int = 40) -> str:
    """The text that starts at token `start`, at least `length` characters of it if there are."""
    text = ""
    for token in tokens[start:]:
        text += token
        if len(text) >= length:
            break
    return text


def _whitespace(run: str, before: str, after: str, level: _Level) -> str:
    """What a run of whitespace between `before` and `after` becomes: a new line before a
    clause, an item or an AND of a query; else the run itself, without spaces at the end of a
    line."""
    if level.query and not level.cases:
        clause = _CLAUSE.match(after)
        if clause and before.upper() != "DELETE":  # DELETE FROM stays one
            level.clause = clause.group(0)
            return _new_line(level, level.base)
        if level.clause in _CONDITIONS and not level.ors and re.match(r"AND\b", after):
            return _new_line(level, level.base + 2)
        if level.clause in _LISTS and before == ",":
            return _new_line(level, level.base + INDENT)
    if "\n" in run:
        return run.lstrip(" \t")
    return run


def _new_line(level: _Level, indent: int) -> str:
    level.line = indent
    return "\n" + " " * indent
