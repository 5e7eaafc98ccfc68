"""kn_search over HTTP (spec kn-search.md, the kn_search API specification of concept and instance recall):
``POST /api/agent-retrieval/in/v1/kn/kn_search``, plus admin routes to list networks and their types.

Bad input is a 400 with ``{"error": …, "field": …}`` (missing/blank ``query`` or ``kn_id``, malformed JSON, an
invalid ``x-account-type``); an unknown ``kn_id`` is a 404; a database that cannot be reached (down, restarting,
refusing connections) is a 503 ``{"error": "… database unavailable …"}`` and the next request tries again; another
backend failure is a 500 with a message, never a stack trace. Instance-recall failures are not errors: the
concepts come back with a ``message`` (spec rule 4).
Responses are cached per network version (:mod:`kgrag.search.cache`, ``KGRAG_KN_SEARCH_CACHE_SIZE``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from enum import StrEnum
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Header, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import InterfaceError, OperationalError

from kgrag.api.access import grant_of, require_kn
from kgrag.errors import NetworkNotFound
from kgrag.network.store import NetworkStore
from kgrag.search.cache import KnSearchCache
from kgrag.search.kn_models import KnSearchRequest, KnSearchResponse
from kgrag.search.pipeline import SearchStore, context_search, kn_search

log = logging.getLogger(__name__)
router = APIRouter(tags=["kn_search"])

ERRORS = {
    400: {"description": "invalid request (the field is named)"},
    404: {"description": "unknown kn_id"},
    500: {"description": "backend failure"},
    503: {"description": "database unavailable"},
}


class AccountType(StrEnum):
    user = "user"
    app = "app"
    anonymous = "anonymous"


def _bad_request(message: str, field: str | None = None) -> JSONResponse:
    return JSONResponse(status_code=400, content={"error": message, "field": field})


_open_lock = threading.Lock()


def app_network_store(app: FastAPI) -> SearchStore:
    """The app's knowledge-network store, opened once, on first use, on the database of the settings the app was
    created with (``app.state.settings``)."""
    service = getattr(app.state, "network_store", None)
    if service is None:
        with _open_lock:
            service = getattr(app.state, "network_store", None)
            if service is None:
                service = app.state.network_store = NetworkStore(app.state.settings.db_url)
    return service


def network_service(request: Request) -> SearchStore:
    """The store of the app serving ``request`` (:func:`app_network_store`)."""
    return app_network_store(request.app)


def database_unavailable(name: str, exc: OperationalError | InterfaceError) -> str:
    """``database unavailable (<the driver's first line>)`` for a lost connection, logged as ``name``'s warning."""
    orig = exc.orig if exc.orig is not None else exc
    log.warning("%s: database unavailable: %s", name, orig)
    reason = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return f"database unavailable ({reason})"


def as_json(response: KnSearchResponse) -> Response:
    """``response`` written as the routes' ``response_model`` with ``response_model_exclude_none`` writes it — the same
    JSON — in one pydantic call: FastAPI's dump, validation and re-dump of a returned model took ~0.8 ms of a 14 kB
    answer, this ~0.06 ms."""
    return Response(response.model_dump_json(exclude_none=True), media_type="application/json")


def answer_or_error(name: str, kn_id: str, search: Callable[[], Any], request: Request,
                    unknown_is_bad_input: bool = False) -> Any:
    """Run ``search`` with the routes' error contract: unknown network 404, bad input (``ValueError``, the query
    tools' ``ToolInputError`` included) 400, else 500 with a message (never a stack trace). A network the caller's
    key may not read gets exactly what an unknown one gets: the 404, or, where the route's tools report an unknown
    network as bad input (``unknown_is_bad_input``: the instance queries), their 400."""
    if not grant_of(request).can_read_kn(kn_id) and unknown_is_bad_input:
        return _bad_request(f"unknown knowledge network {kn_id!r}")
    try:
        require_kn(request, kn_id)
        return search()
    except NetworkNotFound as exc:
        raise HTTPException(404, f"knowledge network {kn_id!r} not found") from exc
    except ValueError as exc:  # attribute_conditions naming an unknown object type or attribute
        return _bad_request(str(exc), "attribute_conditions" if "attribute_conditions" in str(exc) else None)
    except (OperationalError, InterfaceError) as exc:  # no connection to the database (pool_pre_ping retries)
        return JSONResponse(status_code=503, content={"error": f"{name} failed: {database_unavailable(name, exc)}"})
    except Exception as exc:  # noqa: BLE001 - a backend failure: a message, never a stack trace
        log.exception("%s failed", name)
        return JSONResponse(status_code=500, content={"error": f"{name} failed: {type(exc).__name__}: {exc}"})


@router.post("/api/agent-retrieval/in/v1/kn/kn_search", response_model=KnSearchResponse, responses=ERRORS,
             response_model_exclude_none=True)
def kn_search_route(
    search: KnSearchRequest,
    request: Request,
    x_account_id: Annotated[str | None, Header(max_length=256)] = None,
    x_account_type: Annotated[AccountType | None, Header()] = None,
) -> Any:
    """Concept recall (object, relation and action types) and semantic instance recall for ``query`` on ``kn_id``."""
    cache: KnSearchCache | None = getattr(request.app.state, "kn_search_cache", None)

    def run() -> Any:
        service = network_service(request)  # inside the error contract: opening it needs the database
        computed = partial(kn_search, search, service)
        return as_json(computed() if cache is None
                       else cache.get_or_compute(search, service.network_version(search.kn_id), computed))

    return answer_or_error("kn_search", search.kn_id, run, request)


@router.post("/api/agent-retrieval/in/v1/kn/context_search", response_model=KnSearchResponse, responses=ERRORS,
             response_model_exclude_none=True)
def context_search_route(
    search: KnSearchRequest,
    request: Request,
    x_account_id: Annotated[str | None, Header(max_length=256)] = None,
    x_account_type: Annotated[AccountType | None, Header()] = None,
) -> Any:
    """kn_search plus ``contextual_knowledge`` (spec contextual-recall.md): how the question's keywords, attribute
    values and relations are stored. Same request as kn_search; with a ``session_id`` later turns only recall
    what is new."""
    return answer_or_error("context_search", search.kn_id,
                           lambda: as_json(context_search(search, network_service(request))), request)


async def validation_error_as_400(request: Request, exc: RequestValidationError) -> JSONResponse:
    """Under ``/api/agent-retrieval/`` invalid input is a 400 naming the field (malformed JSON included)."""
    errors = exc.errors()
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body",)]
    field = ".".join(loc) or None
    if first.get("type") == "json_invalid":
        return _bad_request(f"malformed JSON body: {first.get('msg')}", None)
    return _bad_request(f"{field}: {first.get('msg')}" if field else str(first.get("msg")), field)


@router.get("/api/kn/networks", tags=["kn-admin"])
def list_networks(request: Request) -> list[dict[str, str]]:
    """Every loaded network the caller's key may read."""
    grant = grant_of(request)
    return [{"kn_id": kn_id, "name": name} for kn_id, name in network_service(request).list_networks()
            if grant.can_read_kn(kn_id)]


@router.get("/api/kn/networks/{kn_id}", tags=["kn-admin"], responses={404: ERRORS[404]})
def show_network(kn_id: str, request: Request) -> dict[str, Any]:
    """A network's object, relation and action types (ids, names, counts)."""
    try:
        require_kn(request, kn_id)
        network = network_service(request).get_network(kn_id)
    except NetworkNotFound as exc:
        raise HTTPException(404, f"knowledge network {kn_id!r} not found") from exc
    return {
        "kn_id": network.kn_id,
        "name": network.name,
        "object_types": [{"id": t.id, "name": t.name, "properties": len(t.data_properties)} for t in network.object_types],
        "relation_types": len(network.relation_types),
        "action_types": len(network.action_types),
    }
