"""The console's HTTP face: the page at ``/`` (static, its libraries vendored at install: no CDN), its assets under
``/console/assets/``, and the small read-only routes the page needs besides the agent (``/agent/stream``) and the
retrieval routes: the sources it can ask, a source's schema with counts, one node's properties or triples.

    GET /console/api/sources                  -> {"networks": [{"id", "name"}], "kgs": [{"id", "name", "prepared"}]}
    GET /console/api/schema?kn=medical        -> object / relation types with counts (``?kg=demo``: relations)
    GET /console/api/node?kg=demo&id=m.0yr8s  -> the entity's triples (``?kn=…&id=Disease:百日咳``: its properties)

An unknown source or id is a 404 with a message; a request naming neither or both of ``kn`` and ``kg`` a 400.
The routes read the app's settings (``app.state.settings``, else :func:`kgrag.config.get_settings`) and share the
agent's network store (:func:`kgrag.agent.resources.resources_for`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from kgrag.access.grants import OPEN, grant_of
from kgrag.agent.resources import resources_for
from kgrag.config import Settings, get_settings
from kgrag.console import data
from kgrag.data.registry import dataset_names, unknown_dataset
from kgrag.errors import KgragError, NetworkNotFound

__all__ = ["ASSETS", "STATIC", "console_router", "mount_console"]

STATIC = Path(__file__).resolve().parent / "static"
#: the URL prefix of the page's scripts, styles and vendored libraries (served without a key: they hold no data)
ASSETS = "/console/assets"

Name = Annotated[str | None, Query(min_length=1, max_length=200)]


def _settings(request: Request) -> Settings:
    return getattr(request.app.state, "settings", None) or get_settings()


def _source(kn: str | None, kg: str | None) -> tuple[str, str]:
    if (kn is None) == (kg is None):
        raise HTTPException(400, "name one source: ?kn=<network> or ?kg=<KG>")
    return ("kn", kn) if kn is not None else ("kg", kg)  # type: ignore[return-value]


def _readable(request: Request, kind: str, name: str, work: Callable[[], Any]) -> Callable[[], Any]:
    """``work`` on a source the caller's key may read; one it may not fails as one that is not there, and the
    sources an unknown one's message lists are those the key may read (:mod:`kgrag.api.access`)."""
    grant = grant_of(request)
    settings = _settings(request)

    def unknown() -> Exception:
        if kind == "kn":
            known = ", ".join(grant.readable_kns(k for k, _ in resources_for(settings).store.list_networks()))
            return NetworkNotFound(f"unknown network {name!r}: loaded networks are {known or 'none'}. Load one "
                                   f"with `kgrag kn load PATH`.")
        return KgragError(unknown_dataset(name, grant.readable_kgs(dataset_names(settings))))

    def run() -> Any:
        if not (grant.can_read_kn(name) if kind == "kn" else grant.can_read_kg(name)):
            raise unknown()
        if grant is OPEN:
            return work()
        try:
            return work()
        except (NetworkNotFound, KgragError) as exc:
            if isinstance(exc, NetworkNotFound) or "unknown dataset" in str(exc):
                raise unknown() from None
            raise

    return run


async def _answer(work: Callable[[], Any]) -> Any:
    """Run ``work`` off the event loop; an unknown source or id is a 404 with the store's message."""
    try:
        return await run_in_threadpool(work)
    except (NetworkNotFound, KgragError, LookupError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        raise HTTPException(404, message) from None


def console_router() -> APIRouter:
    router = APIRouter(tags=["console"])

    @router.get("/", include_in_schema=False)
    def page() -> FileResponse:
        """The console page."""
        return FileResponse(STATIC / "index.html", media_type="text/html", headers={"cache-control": "no-cache"})

    @router.get("/console/api/sources")
    async def sources(request: Request) -> dict[str, Any]:
        """Every network and KG the agent can be asked on (those the caller's key may read)."""
        settings = _settings(request)
        grant = grant_of(request)
        found = await _answer(lambda: data.sources(settings, resources_for(settings).store))
        return {**found, "networks": [n for n in found["networks"] if grant.can_read_kn(n["id"])],
                "kgs": [k for k in found["kgs"] if grant.can_read_kg(k["id"])]}

    @router.get("/console/api/schema")
    async def schema(request: Request, kn: Name = None, kg: Name = None) -> dict[str, Any]:
        """A network's object and relation types and properties with counts, or a KG's relations with counts."""
        kind, name = _source(kn, kg)
        settings = _settings(request)
        if kind == "kn":
            return await _answer(_readable(request, kind, name,
                                           lambda: data.network_schema(resources_for(settings).store, name)))
        return await _answer(_readable(request, kind, name, lambda: data.kg_schema(settings, name)))

    @router.get("/console/api/changes")
    async def changes(request: Request, kn: Annotated[str, Query(min_length=1, max_length=200)]) -> dict[str, Any]:
        """A network's latest changes (the audit log: who, when, versions, counts), newest first."""
        settings = _settings(request)
        return await _answer(_readable(request, "kn", kn,
                                       lambda: data.network_changes(resources_for(settings).store, kn)))

    @router.get("/console/api/node")
    async def node(request: Request, id: Annotated[str, Query(min_length=1, max_length=2000)],  # noqa: A002
                   kn: Name = None, kg: Name = None) -> dict[str, Any]:
        """One instance's properties (a network) or one entity's triples (a KG)."""
        kind, name = _source(kn, kg)
        settings = _settings(request)
        if kind == "kn":
            return await _answer(_readable(request, kind, name,
                                           lambda: data.network_node(resources_for(settings).store, name, id)))
        return await _answer(_readable(request, kind, name, lambda: data.kg_node(settings, name, id)))

    return router


def mount_console(app: Any) -> None:
    """Add the page, its assets and its routes to ``app``."""
    app.include_router(console_router())
    app.mount(ASSETS, StaticFiles(directory=STATIC, check_dir=False), name="console-assets")
