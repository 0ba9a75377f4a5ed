"""A queue's health from its counts, by the queue's health rules (as Nexus does per queue)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import names
from .models import Health

if TYPE_CHECKING:
    from .spec import HealthRules


@dataclass(frozen=True)
class WorkerPresence:
    """How many workers of a queue heartbeat: live ones, and stale ones not forgotten yet."""

    live: int
    stale: int


_RANK: dict[str, int] = {"Healthy": 0, "Degraded": 1, "Unhealthy": 2}


def evaluate(
    rules: HealthRules,
    counts: dict[str, int],
    oldest_pending_seconds: float,
    workers: WorkerPresence | None = None,
    expects_workers: bool = False,
) -> tuple[Health, list[str]]:
    """The worst state any rule gives, with one reason per rule that fired.

    The rule on workers (`whenNoWorkers`) applies when `workers` is known and the queue expects
    workers: none heartbeats while the oldest due message waited longer than
    `noWorkersAfterSeconds`. Nothing due is healthy without workers (scaled to zero)."""
    if not rules.enabled:
        return "Disabled", []
    findings: list[tuple[str, str]] = []
    errors = counts.get(names.ERROR, 0)
    if errors and rules.when_errors != "Healthy":
        findings.append((rules.when_errors, f"{errors} message(s) in Error"))
    abandoned = counts.get(names.ABANDONED, 0)
    if abandoned and rules.when_abandoned != "Healthy":
        findings.append((rules.when_abandoned, f"{abandoned} message(s) Abandoned"))
    limit = rules.max_oldest_pending_seconds
    if limit and oldest_pending_seconds > limit:
        findings.append(
            ("Unhealthy", f"oldest due message waited {oldest_pending_seconds:.0f}s > {limit:g}s")
        )
    if (
        workers is not None
        and expects_workers
        and workers.live == 0
        and rules.when_no_workers != "Healthy"
        and oldest_pending_seconds > rules.no_workers_after_seconds
    ):
        stale = f" ({workers.stale} stale)" if workers.stale else ""
        findings.append(
            (
                rules.when_no_workers,
                f"no live worker heartbeats{stale}; oldest due message waited "
                f"{oldest_pending_seconds:.0f}s",
            )
        )
    state: Health = "Healthy"
    for level, _ in findings:
        if _RANK[level] > _RANK[state]:
            state = level  # type: ignore[assignment]
    return state, [reason for _, reason in findings]
