"""The kopf operator: Queue resources -> tables, default statuses, worker Deployments, scaling.

`main` runs kopf with the handlers of `registrations`, which read a Queue and call the work:
`reconcile` (table, registry row, Deployment, HPA, deletion policy) and `observe` (counts,
status, gauges, scaling). Those use `kube` (the Kubernetes client), `databases` (one pool per
URL) and `gauges`, all held by `state.OperatorState`, kopf's memo. `builders`, `conditions` and
`crd` are pure functions of the spec.

Imported as `tablequeue.operator` (never as `operator`, the standard library module).
"""

from tablequeue.extras import require

# Before anything imports kopf: without the extra, one error that says what to install.
require("tablequeue operator", "operator")
