"""The keys of ``kgrag serve`` on the LangGraph API server (``langgraph dev`` / a deployment: langgraph.json's
``auth.path``): threads, runs, crons and the store answer only to a valid key, each key sees only its own threads
and runs, and a run asks only a network or KG its key may read.

    curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:2024/threads -d '{}'

Contract (the same keys, :mod:`kgrag.access.keys`, on the database of ``KGRAG_DATABASE_URL``):
- **authenticate**: no ``KGRAG_API_KEY`` and no key created: open (every caller is ``anonymous``, as before);
  otherwise ``Authorization: Bearer <key>`` or 401; ``/ok`` (liveness) is always open.
- **threads, runs, crons**: a new resource is stamped ``metadata.owner`` = the key's name, and a key reads,
  searches, updates and deletes only its own (another key's thread is a 404, as one that is not there).
- **store**: each key's items live under its own name (the namespace it gives is taken inside ``(key name, …)``),
  so a key never reads, lists or overwrites another's.
- **assistants**: every key reads and searches them (the graph ``agent`` is the server's); only an admin key creates,
  changes or deletes one.
- **a run** (``threads.create_run``): its context carries the key's readable networks and KGs, so the agent answers
  a graph the key may not read as one that does not exist; a key that covers only some graphs must name one (400).
The agent routes mounted beside (``http.app``: :mod:`kgrag.api.langgraph_http`) check the same keys themselves
(:mod:`kgrag.api.security`).
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from langgraph_sdk import Auth

from kgrag.access.grants import OPEN, Grant
from kgrag.access.keys import KeyStore
from kgrag.config import get_settings
from kgrag.network.store.core import make_engine

__all__ = ["auth"]

auth = Auth()
_stores: list[KeyStore] = []


def _store() -> KeyStore:
    if not _stores:
        _stores.append(KeyStore(make_engine(get_settings().db_url)))
    return _stores[0]


def _grant_of(user: Any) -> Grant:
    kns, kgs = user["kgrag_kns"], user["kgrag_kgs"]
    return Grant(user.identity, user["kgrag_scope"], None if kns is None else frozenset(kns),
                 None if kgs is None else frozenset(kgs))


#: the server's liveness route: open, as ``/healthz`` on ``kgrag serve``
OPEN_PATHS = frozenset({"/ok"})


@auth.authenticate
async def authenticate(authorization: str | None, path: str) -> Auth.types.MinimalUserDict:
    legacy = get_settings().api_key.get_secret_value()
    if path in OPEN_PATHS:
        grant: Grant | None = OPEN
    else:
        grant = await anyio.to_thread.run_sync(lambda: _store().resolve(authorization, legacy))
    if grant is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="missing or invalid bearer token "
                                            "(Authorization: Bearer <key>)", headers={"WWW-Authenticate": "Bearer"})
    return {"identity": grant.name, "is_authenticated": True, "permissions": [grant.scope],
            "kgrag_scope": grant.scope, "kgrag_kns": None if grant.kns is None else sorted(grant.kns),
            "kgrag_kgs": None if grant.kgs is None else sorted(grant.kgs)}


def _stamp(ctx: Auth.types.AuthContext, value: dict) -> dict[str, str]:
    """Stamp a created resource with its owner; the filter every read of it goes through."""
    if isinstance(value, dict):
        if value.get("metadata") is None:
            value["metadata"] = {}
        value["metadata"].update(owner=ctx.user.identity)  # in place: the server keeps this dict
    return {"owner": ctx.user.identity}


@auth.on
async def owned(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Every resource without a handler of its own: its owner's only."""
    return _stamp(ctx, value)


@auth.on.store()
async def own_store(ctx: Auth.types.AuthContext, value: Any) -> None:
    """A store operation's namespace is taken inside the key's own: ``("notes",)`` is ``(key name, "notes")``."""
    namespace = tuple(value.get("namespace") or ())
    if namespace[:1] != (ctx.user.identity,):
        value["namespace"] = (ctx.user.identity, *namespace)


@auth.on.assistants.read
async def read_assistants(ctx: Auth.types.AuthContext, value: Any) -> None:
    return None  # every key may read the server's assistants


@auth.on.assistants.search
async def search_assistants(ctx: Auth.types.AuthContext, value: Any) -> None:
    return None


@auth.on.assistants.create
async def create_assistant(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    if "admin" not in ctx.permissions:
        raise Auth.exceptions.HTTPException(status_code=403, detail="only an admin key changes assistants")
    return _stamp(ctx, value)


@auth.on.assistants.update
async def update_assistant(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    return await create_assistant(ctx, value)


@auth.on.assistants.delete
async def delete_assistant(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    return await create_assistant(ctx, value)


@auth.on.threads.create_run
async def create_run(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """A run plans only over graphs its key may read (the agent routes' rule, :mod:`kgrag.api.agent_routes`): the
    run context gets the key's ``readable_kns`` / ``readable_kgs`` (set here, over anything the caller sent), so a
    graph it may not read is answered as one that does not exist; a key that covers only some graphs must name
    one (400)."""
    grant = _grant_of(ctx.user)
    kwargs = value.setdefault("kwargs", {})
    run_input = kwargs.get("input") or {}
    if (isinstance(run_input, dict) and run_input.get("kg") is None and run_input.get("kn_id") is None
            and (grant.kns is not None or grant.kgs is not None)):
        raise Auth.exceptions.HTTPException(status_code=400, detail=f"key {grant.name!r} covers only some graphs: "
                                            "name the kg or kn_id to ask")
    context = kwargs.get("context")
    kwargs["context"] = {**(context if isinstance(context, dict) else {}), **grant.readable()}
    return _stamp(ctx, value)
