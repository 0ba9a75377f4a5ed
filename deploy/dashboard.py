"""tablequeue's Grafana dashboard, built in code with grafana-foundation-sdk.

    .venv/bin/python deploy/dashboard.py > charts/tablequeue/files/dashboards/tablequeue.json

The chart ships the JSON in a ConfigMap labelled grafana_dashboard: "1"; a test keeps the file
equal to `dashboard_json()` and runs every panel's query against a real Prometheus. The series
are those of tablequeue/metrics.py: queue gauges from the operator (labels namespace, queue),
worker series from the sidecars (queue, plus namespace and container from the chart's PodMonitor).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from grafana_foundation_sdk.builders import dashboard, prometheus, statetimeline, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh

UID = "tablequeue-overview"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
QUEUES = 'namespace=~"$namespace", queue=~"$queue"'
"""The label matchers of the dashboard's variables, in every query."""
RATE = "$__rate_interval"
QUANTILES = (0.5, 0.95, 0.99)


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str


def _latency(metric: str) -> list[Query]:
    return [
        Query(
            f"histogram_quantile({q}, sum by (namespace, queue, le) "
            f"(rate({metric}_bucket{{{QUEUES}}}[{RATE}])))",
            f"p{round(q * 100)} {{{{namespace}}}}/{{{{queue}}}}",
        )
        for q in QUANTILES
    ]


@dataclass(frozen=True)
class PanelSpec:
    title: str
    description: str
    queries: list[Query]
    unit: str
    kind: str = "timeseries"  # or "state" (a state timeline)


PANELS: list[PanelSpec] = [
    PanelSpec(
        "Backlog",
        "Due messages per queue (Pending, and Sleeping ones whose time has come): what the "
        "autoscaler scales on.",
        [
            Query(
                f"sum by (namespace, queue) (tablequeue_backlog{{{QUEUES}}})",
                "{{namespace}}/{{queue}}",
            )
        ],
        "short",
    ),
    PanelSpec(
        "Oldest pending age",
        "How long the oldest due message has waited since it could be processed.",
        [
            Query(
                f"max by (namespace, queue) (tablequeue_oldest_pending_age_seconds{{{QUEUES}}})",
                "{{namespace}}/{{queue}}",
            )
        ],
        "s",
    ),
    PanelSpec(
        "Messages by status",
        "Rows per status (Processed only where the queue keeps processed messages).",
        [
            Query(
                f"sum by (namespace, queue, status) (tablequeue_messages{{{QUEUES}}})",
                "{{queue}} {{status}}",
            )
        ],
        "short",
    ),
    PanelSpec(
        "Throughput by outcome",
        "Messages settled per second by the workers, by outcome (processed, retrying, errored, "
        "rescheduled, requeued, lost, released).",
        [
            Query(
                f"sum by (namespace, queue, outcome) "
                f"(rate(tablequeue_worker_messages_total{{{QUEUES}}}[{RATE}]))",
                "{{queue}} {{outcome}}",
            )
        ],
        "ops",
    ),
    PanelSpec(
        "Processing latency",
        "Time the handler took: p50, p95, p99.",
        _latency("tablequeue_worker_processing_seconds"),
        "s",
    ),
    PanelSpec(
        "Queue latency",
        "From when a message could be processed to when its handler started: p50, p95, p99.",
        _latency("tablequeue_worker_queue_latency_seconds"),
        "s",
    ),
    PanelSpec(
        "Errors by kind",
        "Worker errors per second: handler failures, time-outs, database errors.",
        [
            Query(
                f"sum by (namespace, queue, kind) "
                f"(rate(tablequeue_worker_errors_total{{{QUEUES}}}[{RATE}]))",
                "{{queue}} {{kind}}",
            )
        ],
        "ops",
    ),
    PanelSpec(
        "In flight",
        "Handlers running now, over all workers of a queue.",
        [
            Query(
                f"sum by (namespace, queue) (tablequeue_worker_in_flight{{{QUEUES}}})",
                "{{namespace}}/{{queue}}",
            )
        ],
        "short",
    ),
    PanelSpec(
        "Desired vs ready workers",
        "Replicas the operator wants (Operator mode) and worker sidecars that answer Prometheus.",
        [
            Query(
                f"sum by (namespace, queue) (tablequeue_operator_desired_replicas{{{QUEUES}}})",
                "desired {{namespace}}/{{queue}}",
            ),
            Query(
                f'sum by (namespace, queue) (up{{container="tablequeue-worker", {QUEUES}}})',
                "ready {{namespace}}/{{queue}}",
            ),
        ],
        "short",
    ),
    PanelSpec(
        "Health",
        "1: Healthy (or health disabled); 0: Unhealthy (spec.health found Error, Abandoned or "
        "too old messages).",
        [
            Query(
                f"min by (namespace, queue) (tablequeue_queue_healthy{{{QUEUES}}})",
                "{{namespace}}/{{queue}}",
            )
        ],
        "short",
        kind="state",
    ),
    PanelSpec(
        "Operator reconcile errors",
        "Failed reconciliations in the interval, by reason.",
        [
            Query(
                f"sum by (namespace, queue, reason) "
                f"(increase(tablequeue_operator_reconcile_errors_total{{{QUEUES}}}[{RATE}]))",
                "{{queue}} {{reason}}",
            )
        ],
        "short",
    ),
    PanelSpec(
        "Lease rounds held back",
        "Lease rounds per second that a flow control cut short: the queue's rate limit "
        "(spec.rateLimit) or its global concurrency (spec.globalConcurrency) reached.",
        [
            Query(
                f"sum by (namespace, queue) "
                f"(rate(tablequeue_worker_throttled_total{{{QUEUES}}}[{RATE}]))",
                "rate limit {{queue}}",
            ),
            Query(
                f"sum by (namespace, queue) "
                f"(rate(tablequeue_worker_concurrency_limited_total{{{QUEUES}}}[{RATE}]))",
                "global concurrency {{queue}}",
            ),
        ],
        "ops",
    ),
    PanelSpec(
        "Paused",
        "1 while the workers find their queue paused (queue pause, spec.paused): they lease "
        "nothing.",
        [
            Query(
                f"max by (namespace, queue) (tablequeue_worker_queue_paused{{{QUEUES}}})",
                "{{namespace}}/{{queue}}",
            )
        ],
        "short",
        kind="state",
    ),
    PanelSpec(
        "Lease statements",
        "Lease statements per second that returned messages, over all workers of a queue.",
        [
            Query(
                f"sum by (namespace, queue) "
                f"(rate(tablequeue_worker_lease_batches_total{{{QUEUES}}}[{RATE}]))",
                "{{namespace}}/{{queue}}",
            )
        ],
        "ops",
    ),
    PanelSpec(
        "Given back: the app did not answer",
        "Messages per second an HTTP handler's workers gave back (Pending again, no attempt "
        "counted) because the app could not be reached.",
        [
            Query(
                f"sum by (namespace, queue) "
                f"(rate(tablequeue_worker_app_given_back_total{{{QUEUES}}}[{RATE}]))",
                "{{namespace}}/{{queue}}",
            )
        ],
        "ops",
    ),
    PanelSpec(
        "Rows removed by retention",
        "Rows the workers' retention rounds deleted in the interval, by kind: messages, "
        "results, attempts, leftovers, subscriptions, audit entries.",
        [
            Query(
                f"sum by (namespace, queue, what) "
                f"(increase(tablequeue_worker_purged_total{{{QUEUES}}}[{RATE}]))",
                "{{queue}} {{what}}",
            )
        ],
        "short",
    ),
    PanelSpec(
        "Pod deletion cost patches",
        "Worker pods whose deletion cost the operator changed in the interval (their messages "
        "in flight moved bucket), so that scale-in removes idle pods first.",
        [
            Query(
                f"sum by (namespace, queue) (increase("
                f"tablequeue_operator_deletion_cost_patches_total{{{QUEUES}}}[{RATE}]))",
                "{{namespace}}/{{queue}}",
            )
        ],
        "short",
    ),
]
DEPRECATED_METRICS = {"tablequeue_worker_at_limit": "tablequeue_worker_concurrency_limited"}
"""Old names exported beside their new one for a release: the dashboard charts the new one."""


def _variable(name: str, label: str, query: str) -> dashboard.QueryVariable:
    return (
        dashboard.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(query)
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .multi(True)
        .include_all(True)
        .all_value(".*")
    )


def _panel(spec: PanelSpec) -> timeseries.Panel | statetimeline.Panel:
    # Two panels a row, each half the grid's 24 columns wide.
    panel: timeseries.Panel | statetimeline.Panel
    if spec.kind == "state":
        panel = statetimeline.Panel().height(8).span(12)
    else:
        panel = timeseries.Panel().height(8).span(12)
    panel = panel.title(spec.title).description(spec.description).unit(spec.unit)
    panel = panel.datasource(DATASOURCE)
    for ref, query in zip("ABCDEFGH", spec.queries, strict=False):
        panel = panel.with_target(
            prometheus.Dataquery().expr(query.expr).legend_format(query.legend).ref_id(ref)
        )
    return panel


def build() -> dashboard.Dashboard:
    board = (
        dashboard.Dashboard("tablequeue")
        .uid(UID)
        .description("Queues, workers and the operator of tablequeue (SQL-table message queues)")
        .tags(["tablequeue"])
        .refresh("30s")
        .time("now-1h", "now")
        .with_variable(
            dashboard.DatasourceVariable("datasource").label("Data source").type("prometheus")
        )
        .with_variable(
            _variable("namespace", "Namespace", "label_values(tablequeue_backlog, namespace)")
        )
        .with_variable(
            _variable(
                "queue",
                "Queue",
                'label_values(tablequeue_backlog{namespace=~"$namespace"}, queue)',
            )
        )
    )
    for spec in PANELS:
        board = board.with_panel(_panel(spec))
    return board


def dashboard_json() -> str:
    """The dashboard as the chart ships it (stable: sorted keys, a final newline)."""
    model = build().build()
    return (
        json.dumps(json.loads(json.dumps(model, cls=JSONEncoder)), indent=2, sort_keys=True) + "\n"
    )


if __name__ == "__main__":
    sys.stdout.write(dashboard_json())
