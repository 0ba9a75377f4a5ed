"""The processes' options, each defined once as a pydantic-settings model: `worker`, `api` and
`operator` (their flags, `TABLEQUEUE_*` variables and the operator's sidecar environment are
derived from them; in the core so that the `tablequeue` command builds every flag without the
processes' extras installed), and `env`, the variables of a field."""
