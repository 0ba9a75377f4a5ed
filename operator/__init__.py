"""The kopf operator: Queue resources -> tables, default statuses, worker Deployments, scaling.

Imported as `tablequeue.operator` (never as `operator`, the standard library module).
"""
