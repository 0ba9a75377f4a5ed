"""Schema-driven fuzzing of the HTTP API (schemathesis) over real HTTP, shared by the quick and
the deep fuzz tests: seeded queues to aim at, a cheap snapshot of every table, and one loop that
sends the generated requests (as the admin, a reader or nobody when tokens are on) and checks
after each: no 5xx, and a refused request, a read, and anything but an admin's change leave
every table exactly as it was."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import requests
import schemathesis
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from requests.structures import CaseInsensitiveDict
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.generation.case import Case

from tablequeue import Database, Failure, NewMessage, Queue
from tablequeue.api.auth import Auth

from .api_server import serve_api

PREDICATES = ['Sku == "123"', "n >= 3", "Paid == true and Total > 100", "Missing == null"]
STATUSES = ["Pending", "OnHold", "Error", "Paused", "Cancelled"]


def seed_queues(make_queue: Callable[..., Queue]) -> dict[str, list[Any]]:
    """Two queues with messages in most statuses, and their names, ids and tracking ids."""
    orders = make_queue("orders", category="Sales", keep_processed_for="forever", max_attempts=2)
    make_queue("audit-log", category="Ops", idempotent=True)
    orders.enqueue_many(
        [
            NewMessage(
                message={"n": n, "Sku": "123" if n % 2 else "9", "Paid": n > 3, "Total": n * 50},
                message_id=f"M-{n}" if n % 3 == 0 else None,
                priority=5 if n < 3 else 0,
            )
            for n in range(10)
        ]
    )
    batch = orders.lease("fuzzer", batch_size=3)
    orders.fail("fuzzer", [Failure(batch.messages[0], "boom", permanent=True)])
    orders.enqueue({"n": 99}, status="OnHold", after=3600)
    messages = orders.messages()
    return {
        "names": ["orders", "audit-log"],
        "ids": [m.id for m in messages],
        "tracking_ids": [str(m.tracking_id) for m in messages],
    }


def closing_session() -> requests.Session:
    """One connection per request: after a 500, uvicorn drops the connection a pool would reuse."""
    session = requests.Session()
    session.headers["Connection"] = "close"
    return session


class Rows:
    """`tests.support.snapshot.snapshot` with the reflection done once: the fuzzed API creates
    no tables."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.metadata = sa.MetaData()
        self.metadata.reflect(database.engine)

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        with self.database.engine.connect() as connection:
            return {
                name: sorted(map(tuple, connection.execute(sa.select(table))), key=repr)
                for name, table in self.metadata.tables.items()
            }


KNOWN = {"name": "names", "message_id": "ids", "tracking_id": "tracking_ids"}


@dataclass
class Planned:
    """A generated request, who sends it, and which path parameters aim at seeded rows (by index
    into the seeded list: ids and tracking ids differ between engines, so they are filled in when
    the request is sent)."""

    case: Any
    who: str
    aims: dict[str, int] = field(default_factory=dict)

    def aim(self, seeded: dict[str, list[Any]]) -> None:
        for key, index in self.aims.items():
            known = seeded[KNOWN[key]]
            self.case.path_parameters[key] = known[index % len(known)]


def steer(case: Any, data: st.DataObject, seeded: dict[str, list[Any]]) -> dict[str, int]:
    """Aim part of the generated requests at things that exist, so success paths get fuzzed too;
    returns the aimed path parameters."""
    aims: dict[str, int] = {}
    for key, known in KNOWN.items():
        if key in (case.path_parameters or {}):
            index = data.draw(st.sampled_from([*range(len(seeded[known])), None]), label=key)
            if index is not None:
                aims[key] = index
    if isinstance(case.query, dict) and "where" in case.query:
        case.query["where"] = data.draw(st.sampled_from([*PREDICATES, case.query["where"]]))
    if isinstance(case.body, dict):
        if "where" in case.body:
            case.body["where"] = data.draw(st.sampled_from([*PREDICATES, case.body["where"]]))
        if isinstance(case.body.get("status"), str):
            case.body["status"] = data.draw(st.sampled_from([*STATUSES, case.body["status"]]))
    return aims


PLANS = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tablequeue" / "fuzz-plans"
_plans: dict[str, list[Planned]] = {}


def plan_requests(
    document: dict[str, Any], count: int, senders: list[str], seeded: dict[str, list[Any]]
) -> list[Planned]:
    """`count` requests generated from the OpenAPI `document` (valid ones and ones that break
    it), derandomized. Generation costs more than sending (~8 ms a request), so a plan is made
    once per test session and replayed on every engine, and kept under PLANS for the next run,
    keyed by everything it is made from (the document, this module, schemathesis's and
    hypothesis's versions): the same plan, without the minute or two it takes to generate."""
    made_of = [
        document, count, senders, {name: len(rows) for name, rows in sorted(seeded.items())},
        Path(__file__).read_text(),
        metadata.version("schemathesis"), metadata.version("hypothesis"),
    ]  # fmt: skip
    key = hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()[:32]
    if key not in _plans:
        schema = schemathesis.openapi.from_dict(document)
        stored = PLANS / f"{key}.pickle"
        _plans[key] = _load_plan(schema, stored) or _generate_plan(schema, count, senders, seeded)
        if not stored.exists():
            _store_plan(_plans[key], stored)
    return _plans[key]


def _generate_plan(
    schema: Any, count: int, senders: list[str], seeded: dict[str, list[Any]]
) -> list[Planned]:
    cases = st.one_of(
        schema.as_strategy(GenerationMode.POSITIVE),
        schema.as_strategy(GenerationMode.NEGATIVE),
    )
    plan: list[Planned] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases, data=st.data(), who=st.sampled_from(senders))
    def generate(case: Any, data: st.DataObject, who: str) -> None:
        plan.append(Planned(case, who, steer(case, data, seeded)))

    generate()
    return plan


_CASE_FIELDS = ("method", "path", "path_parameters", "cookies", "query", "body", "media_type")


def _store_plan(plan: list[Planned], path: Path) -> None:
    """What makes each request (a Case's fields and metadata, not its operation: that is
    schemathesis's, rebuilt from the document), written whole or not at all."""
    rows = [
        (
            {name: getattr(p.case, name) for name in _CASE_FIELDS},
            None if p.case.headers is None else dict(p.case.headers),
            p.case.multipart_content_types,
            p.case._meta,
            p.who,
            p.aims,
        )
        for p in plan
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as file:
        pickle.dump(rows, file)
    Path(file.name).replace(path)


def _load_plan(schema: Any, path: Path) -> list[Planned] | None:
    """The stored plan (this checkout's own cache, written by _store_plan), or None."""
    try:
        rows = pickle.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    plan = []
    for fields, headers, multipart, meta, who, aims in rows:
        operation = schema[fields["path"]][fields["method"]]
        case = Case(
            operation,
            **fields,
            headers=None if headers is None else CaseInsensitiveDict(headers),
            multipart_content_types=multipart,
            meta=meta,
        )
        plan.append(Planned(case, who, aims))
    return plan


def fuzz_api(
    database: Database,
    seeded: dict[str, list[Any]],
    requests_to_send: int,
    auth: Auth | None = None,
    share: tuple[int, int] = (0, 1),
) -> Counter[str]:
    """Send generated requests; count outcomes as `"<who> <status>xx"`: with `auth`, each is
    sent as `admin`, `reader` or `none` (no token); without, to an open API as `open`.
    `share=(i, n)` sends every n-th of the `requests_to_send` generated, from the i-th on."""
    outcomes: Counter[str] = Counter()
    rows = Rows(database)
    before = rows.snapshot()
    senders: dict[str, str | None] = (
        {"admin": auth.admin_token, "reader": auth.read_token, "none": None}
        if auth
        else {"open": None}
    )
    changers = {"admin", "open"}
    with serve_api(database, auth or Auth()) as url, closing_session() as session:
        document = session.get(url + "/openapi.json", timeout=30).json()
        plan = plan_requests(document, requests_to_send, list(senders), seeded)
        index, shares = share
        for planned in plan[index::shares]:
            planned.aim(seeded)
            case, who = planned.case, planned.who
            token = senders[who]
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            response = case.call(base_url=url, session=session, headers=headers, timeout=30)
            after = rows.snapshot()
            where = f"{who}: {case.as_curl_command(headers, base_url=url)[:800]}"
            if _unhealthy_answer(case, response):
                outcomes[f"{who} unhealthy"] += 1  # the health check's documented 503
                assert after == before, f"{where} is a read but changed rows"
                continue
            outcomes[f"{who} {response.status_code // 100}xx"] += 1
            case.validate_response(response, checks=[not_a_server_error])
            assert response.status_code < 500, f"{where}: {response.text[:500]}"
            if 400 <= response.status_code < 500:
                assert response.json().get("error"), f"{where}: {response.text[:300]}"
                assert after == before, f"{where} was refused but changed rows"
            if who not in changers or case.method == "GET":
                assert after == before, f"{where} may not change anything but changed rows"
            before = after
    return outcomes


def _unhealthy_answer(case: Any, response: requests.Response) -> bool:
    """`GET /queues/{name}/health` answers 503 for an Unhealthy queue (for load balancers and
    uptime monitors): not a server error."""
    if case.path != "/queues/{name}/health" or response.status_code != 503:
        return False
    return bool(response.json().get("health") == "Unhealthy")  # the database is up here
