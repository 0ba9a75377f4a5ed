"""One port for probes, scraping and handlers' progress: /livez, /readyz, /metrics, `GET /drained`
(`drain.py`) and `POST /progress/{trackingId}` (`progress.py`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest


async def start(
    host: str,
    port: int,
    alive: Callable[[], bool],
    unready: Callable[[], str | None],
    routes: Sequence[web.RouteDef] = (),
) -> web.AppRunner:
    async def livez(_: web.Request) -> web.Response:
        return web.Response(
            text="ok\n" if alive() else "loop died\n", status=200 if alive() else 503
        )

    async def readyz(_: web.Request) -> web.Response:
        reason = unready()  # why not ready: 503 with the reason
        if reason is None:
            return web.Response(text="ok\n")
        return web.Response(text=f"not ready: {reason}\n", status=503)

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.add_routes(
        [
            web.get("/livez", livez),
            web.get("/readyz", readyz),
            web.get("/metrics", metrics),
            *routes,
        ]
    )
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
