"""The conformance suite: every rule of the documentation (docs/), run against every engine,
by area (as River's riverdrivertest). Every test takes `db_url` (through `make_queue` or
`database`), so a new engine passes this whole package unchanged before it counts as supported;
tests that depend on what an engine can do ask the `capabilities` fixture, never the engine's
name."""
