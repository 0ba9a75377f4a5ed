"""A copy of KEDA's source with only the scalers tablequeue's ScaledObjects use.

    keda_scalers.py --source KEDA_MODULE_DIR --out DIR

KEDA's operator and metrics server compile all of its 70-odd scalers into one Go package
(`pkg/scalers`), and with them the clients of every cloud and broker they read: half of the 3,338
packages of `cmd/operator` (Elasticsearch's typed API alone is 961). Without them the cold build of
the operator and the metrics server takes 262 s on two cores instead of 423 s. tablequeue's
ScaledObjects use the SQL scalers only (operator/keda.py), so the copy keeps those, drops the other
`*_scaler.go` files and keeps only their cases in the switch between KEDA's `TRIGGERS-START` and
`TRIGGERS-END` markers in `pkg/scaling/scalers_builder.go`. Everything else (the controllers, the
metrics gRPC service, the HPA it writes) is KEDA's own code, unchanged. A trigger of another type
is refused by KEDA itself: "no scaler found for type".

scripts/build-deploy-tools builds the copy through a Go workspace that replaces KEDA's module
with it; a KEDA upgrade whose builder lacks the markers, or whose kept scalers need a dropped
file, fails here or in that build, naming what is missing.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

SCALERS = ("postgresql", "mysql", "mssql")
"""The trigger types kept: PostgreSQL's, which operator/keda.py writes, and the other engines'."""

SHARED = ("azure_queue",)
"""Scaler files kept for what the kept scalers use from them (`externalMetricType`)."""

BUILDER = Path("pkg/scaling/scalers_builder.go")
CASE = re.compile(r'^\tcase "(?P<type>[^"]+)":$')


def trim_builder(text: str, kept: set[str]) -> str:
    """The builder's trigger switch with only the cases of `kept` (and its default)."""
    try:
        head, rest = text.split("\t// TRIGGERS-START\n", 1)
        switch, tail = rest.split("\t// TRIGGERS-END\n", 1)
    except ValueError:
        raise SystemExit(f"keda_scalers: no TRIGGERS-START/END markers in {BUILDER}") from None
    lines, keep = [], True
    for line in switch.splitlines(keepends=True):
        case = CASE.match(line.rstrip("\n"))
        if case:
            keep = case["type"] in kept
        elif line.startswith(("\tdefault:", "\t}")):
            keep = True
        elif line.startswith("\t// "):  # a comment on the next case
            continue
        if keep:
            lines.append(line)
    found = {m["type"] for m in map(CASE.match, (s.rstrip("\n") for s in lines)) if m}
    if found != kept:
        raise SystemExit(f"keda_scalers: {BUILDER} has no case for {sorted(kept - found)}")
    return head + "\t// TRIGGERS-START\n" + "".join(lines) + "\t// TRIGGERS-END\n" + tail


def copy_trimmed(source: Path, out: Path) -> None:
    shutil.copytree(source, out)
    for path in out.rglob("*"):  # the module cache is read-only
        path.chmod(path.stat().st_mode | 0o200)
    wanted = {f"{name}_scaler.go" for name in SCALERS + SHARED}
    scalers = out / "pkg/scalers"
    missing = wanted - {p.name for p in scalers.glob("*_scaler.go")}
    if missing:
        raise SystemExit(f"keda_scalers: {scalers} has no {sorted(missing)}")
    for path in scalers.glob("*_scaler.go"):
        if path.name not in wanted:
            path.unlink()
    builder = out / BUILDER
    builder.write_text(trim_builder(builder.read_text(), set(SCALERS)))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="KEDA's module folder")
    parser.add_argument("--out", type=Path, required=True, help="the copy (must not exist)")
    args = parser.parse_args(argv)
    copy_trimmed(args.source, args.out)
    print(f"KEDA with the scalers {', '.join(SCALERS)} in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
