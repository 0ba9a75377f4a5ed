"""The report of bench.peers (issue 6): the repeats of a measurement summarized (median, min,
max), the issue's targets assessed, the machine described, and the results rendered as the
Markdown beside the results' .json in bench/results/.
"""

from __future__ import annotations

import statistics
from typing import Any

from bench.systems.common import Row
from bench.systems.pgbench_bound import BATCH1_MESSAGES, Pgbench
from bench.systems.pgmq_peer import Pgmq
from bench.systems.pgqueuer_peer import Pgqueuer
from bench.systems.tq import TableQueue, TableQueueWorker

# --- reporting ------------------------------------------------------------------------------


def spread(values: list[float]) -> Row:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def fmt(stat: Row | None, digits: int = 0) -> str:
    if not stat:
        return "-"
    median, low, high = (stat[k] for k in ("median", "min", "max"))
    if f"{low:,.{digits}f}" == f"{high:,.{digits}f}":
        return f"{median:,.{digits}f}"
    return f"{median:,.{digits}f} ({low:,.{digits}f}-{high:,.{digits}f})"


def summarize(key: Row, runs: list[Row]) -> Row:
    good = [r for r in runs if "error" not in r]
    errors = [r["error"] for r in runs if "error" in r]
    if not good:
        return key | {"runs": runs, "errors": errors}
    fields = [f for f in good[0] if isinstance(good[0][f], float)]
    summary = key | {"runs": good} | {f: spread([r[f] for r in good]) for f in fields}
    return summary | ({"errors": errors} if errors else {})


def find(results: list[Row], **key: Any) -> Row | None:
    return next((r for r in results if all(r.get(k) == v for k, v in key.items())), None)


def median(row: Row | None, field: str = "rate") -> float | None:
    return row[field]["median"] if row and field in row else None


def targets(results: list[Row]) -> list[Row]:
    def drain_rate(system: str) -> float | None:
        key = {"workload": "drain", "engine": "postgresql", "workers": 4, "batch": 100}
        return median(find(results, system=system, **key))

    def ratio(name: str, ours: float | None, theirs: float | None, goal: float, what: str) -> Row:
        value = ours / theirs if ours and theirs else None
        met = None if value is None else value >= goal
        return {"target": name, "goal": f">= {goal:g}x {what}", "ratio": value, "met": met}

    worker = drain_rate(TableQueueWorker.label)
    # The bound of the statements: their best batch-100 rate at any client count (in this run
    # more clients were slower: see the drain table).
    bound_rates = [
        median(r)
        for r in results
        if r["workload"] == "drain" and r["system"] == Pgbench.label and r["batch"] == 100
    ]
    bound = max((b for b in bound_rates if b), default=None)
    out = [
        ratio("worker vs pgqueuer", worker, drain_rate(Pgqueuer.label), 1.5, "pgqueuer's worker"),
        ratio("worker vs PGMQ", worker, drain_rate(Pgmq.label), 1.0, "PGMQ's raw loop"),
        ratio(
            "worker vs pgbench",
            worker,
            bound,
            0.8,
            "the pgbench bound (lease + delete, batch 100, best of 1/2/4 clients)",
        ),
    ]
    batch = {
        r["system"]: median(r)
        for r in results
        if r["workload"] == "enqueue" and r["engine"] == "postgresql" and r["mode"] == "batch"
    }
    peers = {s: v for s, v in batch.items() if s != TableQueue.label and v}
    fastest = max(peers, key=lambda s: peers[s]) if peers else None
    out.append(
        ratio(
            "batch enqueue",
            batch.get(TableQueue.label),
            peers.get(fastest) if fastest else None,
            1.5,
            f"the fastest peer's batch path ({fastest})",
        )
    )
    stats = find(results, workload="stats", engine="postgresql", rows=10_000_000)
    ms = stats["ms"]["median"] if stats and "ms" in stats else None
    out.append(
        {"target": "stats query", "goal": "< 50 ms at 10,000,000 rows", "value": ms, "met": None}
        | ({"met": ms < 50} if ms is not None else {})
    )
    lat = find(results, workload="latency", system=TableQueueWorker.label)
    p99 = median(lat, "p99_ms")
    achieved = median(lat, "achieved_rate")
    goal = "p99 < 20 ms at 500 msg/s"
    if achieved is not None and achieved < 450:
        goal += f" (only {achieved:,.0f} msg/s reached: tablequeue's enqueue() is the limit)"
    out.append(
        {"target": "latency", "goal": goal, "value": p99, "met": None}
        | ({"met": p99 < 20} if p99 is not None and achieved and achieved >= 450 else {})
    )
    tq_bloat = find(results, workload="bloat", system=TableQueueWorker.label)
    run = tq_bloat["runs"][0] if tq_bloat else None
    if run and run["snapshots"]:
        first, last = run["snapshots"][0], run["final"]
        rel = next(iter(run["final"]))
        grow = (last[rel]["table_mib"] + last[rel]["indexes_mib"]) / max(
            first[rel]["table_mib"] + first[rel]["indexes_mib"], 0.01
        )
        out.append(
            {
                "target": "bloat",
                "goal": "bounded: table+indexes at the end <= 2x after 10% of the flow",
                "value": grow,
                "met": grow <= 2.0,
            }
        )
    return out


CPU_NOTE = (
    "CPU per message (user + system, /proc; bench/cpu.py): client = the system's side of the "
    "connection (here this driver process, which makes the calls), server = the database's "
    "processes (PostgreSQL's postmaster and backends, MariaDB's server; SQLite runs inside "
    "the client, so its cost is all client). The figure to compare across machines."
)


def cpu_cells(row: Row) -> str:
    return f"{fmt(row.get('client_cpu_us'))} | {fmt(row.get('server_cpu_us'))}"


def _preamble(about: Row, command: str, goals: list[Row], notes: list[str] | None) -> list[str]:
    """The title, the warnings and notes, and the targets (issue 6)."""
    out = [f"# Peer benchmark, {about['date']}", "", f"Command: `{command}`", ""]
    if about.get("load warning"):
        out += [f"**WARNING: {about['load warning']}**", ""]
    for note in notes or []:
        out += [f"**Note:** {note}", ""]
    out += [
        "Figures: median of the repeats, (min-max) when they differ. Only ratios from this one "
        "run count; everything shares one 2-core machine, so the systems' own processes, "
        "PostgreSQL and the benchmark driver compete for the same cores.",
        "",
        "## Targets (issue 6)",
        "",
        "| target | goal | measured | met |",
        "|---|---|--:|---|",
    ]
    for g in goals:
        value = g.get("ratio", g.get("value"))
        shown = "-" if value is None else (f"{value:.2f}x" if "ratio" in g else f"{value:.1f}")
        met = {True: "met", False: "**not met**", None: "not assessed"}[g["met"]]
        out.append(f"| {g['target']} | {g['goal']} | {shown} | {met} |")
    return out


def _enqueue_section(results: list[Row], about: Row) -> list[str]:
    """1. Enqueue, one producer."""
    out: list[str] = []
    out += ["", "## 1. Enqueue, one producer", ""]
    out += [
        "`one`: one enqueue call per message (time-boxed: as many as fit in the box of "
        f"{about['sizes']['one_box']:g} s, at most {about['sizes']['messages']:,}); `batch`: "
        f"{about['sizes']['messages']:,} messages in calls of 1,000. Messages are ~150-byte "
        "JSON orders (bench.worker.body).",
        "",
        CPU_NOTE,
        "",
        "| database | system | mode | messages | messages/s | client CPU µs/msg | "
        "server CPU µs/msg |",
        "|---|---|---|--:|--:|--:|--:|",
    ]
    for r in (r for r in results if r["workload"] == "enqueue" and r["runs"]):
        out.append(
            f"| {r['engine']} | {r['system']} | {r['mode']} | {r['runs'][0]['messages']:,} | "
            f"{fmt(r['rate'])} | {cpu_cells(r)} |"
        )
    return out


def _drain_section(results: list[Row], about: Row) -> list[str]:
    """2. Drain with a no-op handler."""
    out: list[str] = []
    out += ["", "## 2. Drain with a no-op handler", ""]
    out += [
        "Each row starts once the database server is quiet, on an empty queue: its consumers "
        f"start, then {about['sizes']['messages']:,} messages "
        "become visible in one transaction (procrastinate: "
        f"{about['sizes']['procrastinate_depth']:,}, it drains ~1,000/s); the rate is messages "
        "finished per second until the queue is empty (counted every 0.1 s near the end, up to "
        "every 1 s while the backlog lasts), or until the "
        f"{about['sizes']['drain_box']:g} s time box ends (then `messages` is what was drained). "
        "pgbench rows: the messages that left the table over pgbench's own duration "
        "(transactions / tps); it runs a fixed number of transactions, each a full batch: "
        "enough to drain the queue at batch 100, the first "
        f"{min(about['sizes']['messages'], BATCH1_MESSAGES):,} messages at batch 1. "
        "Client CPU: the consumer processes (pgbench: its process), from the fill's commit to "
        "the empty queue; server CPU: PostgreSQL's processes over the same span (the ANALYZE "
        "after the fill and the driver's counts included). A tablequeue row deletes its queue's "
        "results and attempts with the queue, so that no worker of the next row purges them.",
        "",
        "| database | system | consumers | batch | messages | messages/s | client CPU µs/msg | "
        "server CPU µs/msg |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in (r for r in results if r["workload"] == "drain" and "rate" in r):
        out.append(
            f"| {r['engine']} | {r['system']} | {r['workers']} | {r['batch']} | "
            f"{int(statistics.median(x['messages'] for x in r['runs'])):,} | {fmt(r['rate'])} | "
            f"{cpu_cells(r)} |"
        )
    return out


def _latency_section(results: list[Row], about: Row) -> list[str]:
    """3. Steady state: enqueue-to-start latency."""
    out: list[str] = []
    out += ["", "## 3. Steady state: enqueue-to-start latency", ""]
    out += [
        f"One producer enqueues one message per call at {about['sizes']['rate']:g}/s for "
        f"{about['sizes']['latency_seconds']:g} s; one consumer process (batch 100). Latency = "
        "`time.time()` when the handler starts minus `time.time()` right after the enqueue "
        "call returned. tablequeue: the worker (LISTEN/NOTIFY); PGMQ: the raw loop (10 ms sleep "
        "when empty, no notifications); pgqueuer and procrastinate: their workers (LISTEN/NOTIFY); "
        "SQLite: the worker polls (no notifications there), at most every 0.1 s. Client CPU: "
        "the consumer, idle time included; server CPU: the enqueues too. Each row starts once "
        "the database server is quiet (below 5 % of a core over half a second: the drains "
        "before it leave autovacuum and checkpoints running); `quiet after` is how long that "
        "took.",
        "",
        "| database | system | achieved rate /s | samples | p50 ms | p99 ms | client CPU µs/msg | "
        "server CPU µs/msg | quiet after s |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in (r for r in results if r["workload"] == "latency" and "p99_ms" in r):
        out.append(
            f"| {r['engine']} | {r['system']} | {fmt(r['achieved_rate'])} | {fmt(r['samples'])} | "
            f"{fmt(r['p50_ms'], 1)} | {fmt(r['p99_ms'], 1)} | {cpu_cells(r)} | "
            f"{fmt(r.get('server_quiet_after_s'), 1)} |"
        )
    return out


def _stats_section(results: list[Row]) -> list[str]:
    """4. The stats query, and its plans."""
    out: list[str] = []
    out += ["", "## 4. The stats query (`Queue.stats()`)", ""]
    out += [
        "A queue table filled in SQL (PostgreSQL: INSERT ... SELECT generate_series, indexes "
        "rebuilt, VACUUM ANALYZE; SQLite: bench/sqlite_stats.py, no ANALYZE, the size is the "
        "whole database file): 1% Pending, 99% Processed. `Queue.stats()` timed 20 times "
        "in-process after 2 warm-ups (two statements: counts per status; backlog and oldest due).",
        "",
        "| database | rows | table + indexes MiB | build s | stats() ms |",
        "|---|--:|--:|--:|--:|",
    ]
    for r in (r for r in results if r["workload"] == "stats" and "ms" in r):
        out.append(
            f"| {r['engine']} | {r['rows']:,} | {r['total_size_mib']:,.0f} | "
            f"{r['build_seconds']:.0f} | {fmt(r['ms'], 1)} |"
        )
    for r in (r for r in results if r["workload"] == "stats" and "plans" in r):
        out += ["", f"<details><summary>Plans at {r['rows']:,} rows</summary>", ""]
        out += [
            "For reference, EXPLAIN ANALYZE of a plain `GROUP BY status` count and of the "
            "backlog query (first run, cold). `Queue.stats()` itself may count differently "
            "(see tablequeue/queue.py at the commit below).",
            "",
        ]
        for sql, plan in r["plans"].items():
            out += ["```", sql, plan, "```"]
        out += ["</details>"]
    return out


def _bloat_section(results: list[Row]) -> list[str]:
    """5. Bloat after messages flowed through."""
    out: list[str] = []
    out += ["", "## 5. Bloat after messages flowed through, PostgreSQL", ""]
    out += [
        "4 consumers x batch 100 drain while the driver keeps 10,000-20,000 messages waiting "
        "(filled 10,000 at a time in one statement), default autovacuum. Sizes after 10% of "
        "the flow and at the end (queue empty, 2 s later).",
        "",
        "| system | relation | messages | seconds | MiB table+idx at 10% | at end | "
        "dead tuples at end | (auto)vacuums |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in (r for r in results if r["workload"] == "bloat" and r["runs"]):
        run = r["runs"][0]
        for rel, final in run["final"].items():
            first = run["snapshots"][0][rel] if run["snapshots"] else None
            early = f"{first['table_mib'] + first['indexes_mib']:.1f}" if first else "-"
            out.append(
                f"| {r['system']} | {rel} | {run['messages']:,} | {run['seconds']:.0f} | {early} | "
                f"{final['table_mib'] + final['indexes_mib']:.1f} | {final['dead']:,} | "
                f"{final['vacuums']} |"
            )
    return out


def _failures_section(results: list[Row]) -> list[str]:
    """The measurements that failed, if any."""
    out: list[str] = []
    failed = [r for r in results if r.get("errors")]
    if failed:
        out += ["", "## Measurements that failed", ""]
        for r in failed:
            what = {k: v for k, v in r.items() if k in ("workload", "engine", "system", "mode")}
            what |= {k: v for k, v in r.items() if k in ("workers", "batch")}
            out.append(f"- {what}: {'; '.join(sorted(set(r['errors'])))}")
    return out


def _machine_section(about: Row) -> list[str]:
    """The machine."""
    out: list[str] = []
    out += ["", "## Machine", ""]
    out += [f"- {k}: {v}" for k, v in about.items() if k not in ("sizes", "load warning")]
    return out


def markdown(
    results: list[Row], about: Row, command: str, goals: list[Row], notes: list[str] | None = None
) -> str:
    out = [
        *_preamble(about, command, goals, notes),
        *_enqueue_section(results, about),
        *_drain_section(results, about),
        *_latency_section(results, about),
        *_stats_section(results),
        *_bloat_section(results),
        *_failures_section(results),
        *_machine_section(about),
    ]
    return "\n".join(out) + "\n"
