"""What the chart ships for Prometheus, as the tests query it: its alert rules and its Grafana
dashboard's panel queries (tests/deploy/test_monitoring.py against processes, test_pods.py
against pods)."""

from __future__ import annotations

import re
from typing import Any

import yaml

from .deploy_tools import CHART

ALERTS = CHART / "files" / "alerts.yaml"
GRAFANA_VARIABLES = {"$namespace": ".*", "$queue": ".*", "$__rate_interval": "1m"}
"""What Grafana puts in for the dashboard's variables when every queue is selected."""


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard_queries() -> dict[str, str]:
    """Every panel query of the shipped dashboard, by panel title and refId."""
    from deploy.dashboard import PANELS

    found = {}
    for panel in PANELS:
        for ref, query in zip("ABCDEFGH", panel.queries, strict=False):
            expr = query.expr
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            found[f"panel {panel.title!r} {ref}"] = expr
    return found


def watched_series(expr: str) -> str:
    """An alert expression that returns the series it watches whether or not it fires: every
    comparison with a number gets Prometheus' `bool` modifier (0 or 1 instead of a filter)."""
    return re.sub(r"(==|!=|>=|<=|>|<)\s*(?=[0-9.])", r"\1 bool ", expr)
