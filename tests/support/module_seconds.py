"""How long each test module took in a full run, so that the run hands out the longest modules
first: pytest-xdist gives a worker the next module in order whenever it runs dry, and with the
longest first no worker is left alone at the end with a long module started late (the rule a
scheduler calls "longest processing time first").

The figures are `tests/module-seconds.json`, refreshed from a full run's JUnit report:

    scripts/test --junitxml=build/junit.xml
    .venv/bin/python -m tests.support.module_seconds build/junit.xml

They decide only the order: a stale or missing figure costs time, never a result. A module the
file does not know counts as `UNKNOWN_SECONDS`.
"""

from __future__ import annotations

import functools
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "tests" / "module-seconds.json"
UNKNOWN_SECONDS = 30.0
"""A new module's guess: about a typical module's time, so it is neither first nor last."""


@functools.cache
def _figures() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(FIGURES.read_text()).items()}
    except FileNotFoundError:
        return {}


def seconds(module: Path) -> float:
    """The module's time in the last full run the file records."""
    return _figures().get(module.resolve().relative_to(ROOT).as_posix(), UNKNOWN_SECONDS)


def from_junit(report: Path) -> dict[str, float]:
    """Seconds per module file of a JUnit report (pytest's `--junitxml`), whole seconds."""
    totals: defaultdict[str, float] = defaultdict(float)
    for case in ET.parse(report).getroot().iter("testcase"):
        dotted = [part for part in case.get("classname", "").split(".") if not part[:1].isupper()]
        totals["/".join(dotted) + ".py"] += float(case.get("time") or 0)
    return {module: round(total) for module, total in sorted(totals.items())}


if __name__ == "__main__":
    figures = from_junit(Path(sys.argv[1]))
    FIGURES.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"{FIGURES.relative_to(ROOT)}: {len(figures)} modules, {sum(figures.values()):,} s")
