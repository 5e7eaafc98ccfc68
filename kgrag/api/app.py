"""The FastAPI apps. :func:`create_app` (``kgrag serve``): every HTTP route of the project, the agent routes and the
console page at ``/``; ``GET /healthz`` is 200 once the stores are open. :func:`langgraph_app`: what langgraph.json
mounts on the LangGraph server (``http.app``): the agent routes, the console and the retrieval routes it uses.

    uvicorn.run(create_app())     # kgrag serve; open http://127.0.0.1:8000/
"""

from __future__ import annotations

import gc
import logging
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, HTTPException, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from graphs.agent.context import AgentContext
from graphs.agent.graph import graph as agent_graph
from kgrag import __version__
from kgrag.api import keys_routes, kg_tools, kn_changes, kn_query, kn_search, query_modes
from kgrag.api.access import grant_of
from kgrag.api.agent_routes import agent_router
from kgrag.api.security import harden
from kgrag.api.warmup import kg_questions, kn_questions, warm_agent
from kgrag.config import Settings, get_settings
from kgrag.console.routes import mount_console
from kgrag.errors import KgragError
from kgrag.prep.steps import open_prepared_stores
from kgrag.search.cache import KnSearchCache
from kgrag.search.warm import warm_other_names, warm_search
from kgrag.tools.session_store import SessionStore

log = logging.getLogger(__name__)


def _vectors_pending(app: FastAPI) -> dict[str, dict[str, int]]:
    """The networks whose deferred vectors are being made (:meth:`NetworkStore.all_vectors_pending`); empty when
    the network database cannot be read (liveness never fails on it)."""
    try:
        return kn_search.app_network_store(app).all_vectors_pending()
    except Exception:  # noqa: BLE001 - /healthz answers whatever the database does
        log.warning("reading the networks' vector state failed", exc_info=True)
        return {}


def _warm(app: FastAPI) -> None:
    """Warm the knowledge-network search path (:func:`kgrag.search.warm.warm_search`, every type's other-name
    index), then the agent on each prepared KG and loaded network (:func:`kgrag.api.warmup.warm_agent`); never
    raises. ``/healthz`` says ``"warming": false`` only after all of it."""
    report: dict = {}
    kn_asks: dict[str, str] = {}
    try:
        store = kn_search.app_network_store(app)
        report["search"] = warm_search(store)
        report["other_names"] = warm_other_names(store)
        kn_asks = kn_questions(store, [kn_id for kn_id, _ in store.list_networks()])
    except Exception:  # noqa: BLE001 - a cold start still serves (the database may be down: routes say 503)
        log.warning("warming the search path failed; requests warm it as they come", exc_info=True)
    try:
        kg_asks = kg_questions(app.state.settings, sorted(app.state.stores))
        report["agent"] = warm_agent(agent_graph, AgentContext, kg_asks, kn_asks)
    except Exception:  # noqa: BLE001 - as above: the first questions then pay for what was not warmed
        log.warning("warming the agent failed; its first questions warm it", exc_info=True)
    finally:
        log.info("warm: %s", report)
        app.state.warm_report = report
        # what warming built lives as long as the process: out of the cyclic collector's way, a full collection
        # of a warm worker (~450,000 objects, 0.2 s with the GIL held) no longer stalls every request it serves
        gc.collect()
        gc.freeze()
        app.state.warming = False


def _add_retrieval(app: FastAPI) -> None:
    """The knowledge-network retrieval routes (kn_search, context_search, the instance queries, the query modes)
    with their error contract: a validation error under them is a 400 naming the field."""
    app.include_router(kn_search.router)
    app.include_router(kn_query.router)
    app.include_router(query_modes.router)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        if request.url.path.startswith(("/api/agent-retrieval/", "/api/query")):
            return await kn_search.validation_error_as_400(request, exc)
        return await request_validation_exception_handler(request, exc)

    @app.exception_handler(KgragError)
    async def kgrag_error(_: Request, exc: KgragError) -> JSONResponse:
        return JSONResponse(status_code=502, content={"detail": str(exc)})


def _add_agent_and_console(app: FastAPI) -> None:
    """``POST /agent/ask``, ``POST /agent/stream`` and the console page with its routes."""
    app.include_router(agent_router(agent_graph, AgentContext))
    mount_console(app)


def langgraph_app(settings: Settings | None = None) -> FastAPI:
    """The app langgraph.json mounts on the LangGraph server (``http.app``): the agent routes, the console and the
    retrieval routes its playground calls (their stores open on first use)."""
    app = FastAPI(title="kgrag agent and console")
    app.state.settings = settings or get_settings()
    app.state.kn_search_cache = KnSearchCache(app.state.settings.kn_search_cache_size)
    _add_retrieval(app)
    _add_agent_and_console(app)
    harden(app, app.state.settings)  # the same keys as kgrag serve (the server's own routes: langgraph_auth.py)
    return app


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.stores = open_prepared_stores(settings)
        app.state.ready = True
        if settings.warm_on_start:
            app.state.warming = True
            threading.Thread(target=_warm, args=(app,), name="kgrag-warm", daemon=True).start()
        try:
            yield
        finally:
            app.state.ready = False
            for store in app.state.stores.values():
                store.close()
            network_store = getattr(app.state, "network_store", None)
            if network_store is not None:
                network_store.close()
            llm_client = getattr(app.state, "llm_client", None)
            if llm_client is not None:
                llm_client.close()

    app = FastAPI(title="kgrag", version=__version__, lifespan=lifespan)
    app.state.settings = settings  # what the routes read (never get_settings())
    app.state.ready = False
    app.state.warming = False
    app.state.stores = {}
    app.state.kg_sessions = SessionStore()
    app.state.kn_search_cache = KnSearchCache(settings.kn_search_cache_size)
    app.include_router(kg_tools.router)
    app.include_router(kn_changes.router)  # writes: only here, behind the API key (not on langgraph_app)
    app.include_router(keys_routes.router)  # admin keys manage keys (also only here)
    _add_retrieval(app)
    _add_agent_and_console(app)
    harden(app, settings)  # bearer auth, body limit, handler timeout, CORS (KGRAG_API_KEY, … see security.py)

    @app.get("/healthz", tags=["ops"])
    def healthz(request: Request) -> dict:
        """200 once the stores are open (503 before), with the datasets served; ``warming`` is true while the
        search path warms in the background (``KGRAG_WARM_ON_START``, on in ``kgrag serve``); ``pid`` names the
        server process that answered (``kgrag serve --workers N`` runs N); ``vectors_pending``: the networks
        whose deferred vectors (``kgrag kn load --defer-vectors``) are still being made, with the instances done
        and in all (knn over them answers nothing until then)."""
        if not request.app.state.ready:
            raise HTTPException(status_code=503, detail="stores are not open yet")
        return {"status": "ok", "version": __version__, "datasets": sorted(request.app.state.stores),
                "warming": request.app.state.warming, "pid": os.getpid(),
                "vectors_pending": _vectors_pending(request.app)}

    @app.get("/api/datasets", tags=["graph"])
    def datasets(request: Request) -> dict:
        """The KGs whose stores are open and the caller's key may read, with their triple counts."""
        grant = grant_of(request)
        return {name: {"location": s.location, "triples": s.count_triples()}
                for name, s in request.app.state.stores.items() if grant.can_read_kg(name)}

    return app
