"""A minimal app for the worker's HTTP handler: POST /process reads the JSON and answers 200.

Usage: python -m bench.http_app PORT
"""

from __future__ import annotations

import sys

from aiohttp import web


async def process(request: web.Request) -> web.Response:
    await request.json()
    return web.Response(status=200)


def main() -> None:
    app = web.Application()
    app.add_routes([web.post("/process", process)])
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)


if __name__ == "__main__":
    main()
