"""Every Prometheus metric tablequeue exports; docs/reference/metrics.md is generated from here.

The worker's and the operator's: the core never imports this module, so `pip install tablequeue`
needs no prometheus-client; without it, importing this is one error that says what to install.
"""

from .extras import MissingExtra, install_command, installed

if not installed("prometheus_client"):
    raise MissingExtra(
        "tablequeue.metrics needs prometheus-client, not installed: run "
        f"{install_command('worker')} (or the operator extra)"
    )

from prometheus_client import Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800)

# --- worker ---
worker_messages = Counter(
    "tablequeue_worker_messages",
    "Messages settled by this worker, by outcome: processed, rescheduled, retrying, errored, "
    "requeued (a newer version arrived), lost (lease lost or cancelled), released",
    ["queue", "outcome"],
)
worker_app_given_back = Counter(
    "tablequeue_worker_app_given_back",
    "Messages an HTTP handler's worker gave back (Pending again, no attempt counted) because "
    "the app did not answer: the request could not connect, or they were leased and not "
    "started when that happened",
    ["queue"],
)
worker_processing_seconds = Histogram(
    "tablequeue_worker_processing_seconds",
    "Time the handler took",
    ["queue"],
    buckets=LATENCY_BUCKETS,
)
worker_queue_latency_seconds = Histogram(
    "tablequeue_worker_queue_latency_seconds",
    "From when a message could be processed (process_after) to when its handler started",
    ["queue"],
    buckets=LATENCY_BUCKETS,
)
worker_in_flight = Gauge("tablequeue_worker_in_flight", "Handlers running now", ["queue"])
worker_lease_batches = Counter(
    "tablequeue_worker_lease_batches", "Lease statements that returned messages", ["queue"]
)
PURGED_KINDS = ("messages", "results", "attempts", "leftovers", "subscriptions", "audit")
"""The `what` of tablequeue_worker_purged."""
worker_purged = Counter(
    "tablequeue_worker_purged",
    "Rows retention removed: messages (keep*For), results (keepResultsFor), attempts, "
    "leftovers (deleted queues' results and attempts), subscriptions (expired runtime ones), "
    "audit (entries past --keep-audit-days)",
    ["queue", "what"],
)
worker_queue_paused = Gauge(
    "tablequeue_worker_queue_paused",
    "1 while this worker finds its queue paused (it leases nothing), else 0",
    ["queue"],
)
worker_throttled = Counter(
    "tablequeue_worker_throttled",
    "Lease rounds the queue's rate limit cut short (the worker waited for the next token)",
    ["queue"],
)
worker_concurrency_limited = Counter(
    "tablequeue_worker_concurrency_limited",
    "Lease rounds that found the queue's global concurrency reached (the worker waited as on an "
    "empty queue)",
    ["queue"],
)
worker_at_limit = Counter(
    "tablequeue_worker_at_limit",
    "Deprecated, removed in the release after next: tablequeue_worker_concurrency_limited, "
    "which counts the same rounds",
    ["queue"],
)
worker_errors = Counter(
    "tablequeue_worker_errors",
    "Errors by kind: database, handler, timeout",
    ["queue", "kind"],
)

# --- queue gauges (the operator exports them, one grouped query per queue and tick) ---
queue_messages = Gauge(
    "tablequeue_messages", "Messages per status", ["namespace", "queue", "status"]
)
queue_backlog = Gauge(
    "tablequeue_backlog", "Pending messages plus Sleeping ones that are due", ["namespace", "queue"]
)
queue_oldest_pending_age = Gauge(
    "tablequeue_oldest_pending_age_seconds",
    "Age of the oldest due message (since its process_after)",
    ["namespace", "queue"],
)
queue_healthy = Gauge(
    "tablequeue_queue_healthy",
    "1 when the queue is Healthy (or health is disabled), else 0",
    ["namespace", "queue"],
)

# --- operator ---
operator_desired_replicas = Gauge(
    "tablequeue_operator_desired_replicas",
    "Worker replicas of the queue: what the operator wants (Operator mode) or its HPA or KEDA set",
    ["namespace", "queue"],
)
operator_deletion_cost_patches = Counter(
    "tablequeue_operator_deletion_cost_patches",
    "Worker pods whose controller.kubernetes.io/pod-deletion-cost the operator patched (their "
    "messages in flight moved to another bucket: 0, 1, 2, 4, 8, ...)",
    ["namespace", "queue"],
)
operator_reconcile_errors = Counter(
    "tablequeue_operator_reconcile_errors",
    "Reconciliations that failed",
    ["namespace", "queue", "reason"],
)
