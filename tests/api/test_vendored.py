"""The vendored browser libraries (api/static/VENDORED.md): each file is the one named there, by
version and digest, and /docs works with no network: Chromium, with every request that is not to
the test server refused, shows the API's operations from the vendored Swagger UI."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from tablequeue import connect
from tablequeue.spec import QueueResource
from tests.support.api_server import serve_api

from .test_ui_browser import browser, needs_browser, page, shot  # noqa: F401 (fixtures)

STATIC = Path(__file__).resolve().parents[2] / "api" / "static"
VENDORED = {
    # file: (npm package, version, sha256)
    "uPlot.iife.min.js": (
        "uplot",
        "1.6.32",
        "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f",
    ),
    "uPlot.min.css": (
        "uplot",
        "1.6.32",
        "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04",
    ),
    "swagger-ui-bundle.js": (
        "swagger-ui-dist",
        "5.35.0",
        "e6a898692f2d768e807c3ba4626068a69a2c5dd960dd6c76f3e4d3a3de180af2",
    ),
    "swagger-ui.css": (
        "swagger-ui-dist",
        "5.35.0",
        "5ed08757e53da3e026d6cbecc61fe5d43585c9560b302d534ad56692519a273d",
    ),
}
LICENSES = {"uPlot.LICENSE": "MIT License", "swagger-ui.LICENSE": "Apache License"}


@pytest.mark.parametrize("name", sorted(VENDORED))
def test_each_vendored_file_is_the_one_named(name: str) -> None:
    package, version, digest = VENDORED[name]
    assert hashlib.sha256((STATIC / name).read_bytes()).hexdigest() == digest
    [row] = [
        line for line in (STATIC / "VENDORED.md").read_text().splitlines() if f"`{name}`" in line
    ]
    assert f"`{package}`" in row and version in row and digest in row


def test_uplot_names_its_version_and_the_licences_are_there() -> None:
    _, version, _ = VENDORED["uPlot.iife.min.js"]
    script = (STATIC / "uPlot.iife.min.js").read_bytes()
    assert script.startswith(f"/*! https://github.com/leeoniya/uPlot (v{version}) */".encode())
    for name, text in LICENSES.items():
        assert text in (STATIC / name).read_text(), name


@needs_browser
def test_api_docs_render_offline(sqlite_url: str, page: Any) -> None:  # noqa: F811
    from playwright.sync_api import expect

    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("orders"))
        with serve_api(database) as url:
            asked: list[str] = []
            refused: list[str] = []

            def only_the_server(route: Any) -> None:
                asked.append(route.request.url)
                if route.request.url.startswith(url + "/"):
                    route.continue_()
                else:
                    refused.append(route.request.url)
                    route.abort()

            page.route("**/*", only_the_server)
            page.goto(url + "/docs")
            expect(page.locator(".swagger-ui .info .title")).to_contain_text("tablequeue")
            operation = page.locator(".opblock-summary-path", has_text="/queues/{name}/charts")
            expect(operation.first).to_be_visible()
            assert page.locator(".opblock").count() > 20
            shot(page, "api-docs", sqlite_url)
    assert refused == []
    assert url + "/ui/static/swagger-ui-bundle.js" in asked
