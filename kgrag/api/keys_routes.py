"""Manage scoped API keys over HTTP (issue 52: "admin manages keys"), the routes behind ``kgrag keys …``:

    GET  /api/keys                    every key an admin key covers (never a token)
    POST /api/keys                    {"name": "agent-a", "scope": "read", "kns": ["library"], "kgs": []}
                                      -> 201 with the token, shown this once (stored hashed)
    POST /api/keys/{name}/revoke      -> the key, now revoked (every server refuses it within seconds)

Only an admin key may call them (``KGRAG_API_KEY`` or one made with ``--scope admin``), and only within what it
covers: a key it creates covers no network or KG it does not (``kns`` / ``kgs``: ``null`` for all of them, ``[]``
for none), and it lists and revokes only such keys — an admin over network A cannot mint a key for B or revoke
one that reaches B (404, as for a key that does not exist). A key cannot revoke itself (409: use another admin key
or the CLI). A server without any key refuses them (403): the first key is made with ``kgrag keys create`` on the
machine, never handed out by an open server. Each creation and revocation is appended to the audit log
(:mod:`kgrag.access.audit`) under the calling key's name.

Errors (FastAPI's ``{"detail": …}``): not an admin key 403; a name already used, a key revoked already or the
caller's own 409; an unknown name 404; a body that does not validate 422 naming the field; the database unreachable
503.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import InterfaceError, OperationalError

from kgrag.access.audit import AuditLog
from kgrag.access.grants import OPEN, Grant, Scope
from kgrag.access.keys import NAME_RE, KeyInfo
from kgrag.api.access import require_admin
from kgrag.api.kn_search import database_unavailable
from kgrag.api.security import key_store_of

__all__ = ["router"]

router = APIRouter(tags=["keys"])

KeyName = Annotated[str, Path(min_length=1, max_length=100, description="the key's name (GET /api/keys)")]
GraphId = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00]+$")]

ERRORS: dict[int | str, dict[str, Any]] = {
    403: {"description": "not an admin key (or a server without keys)"},
    503: {"description": "database unavailable"},
}


class KeyIn(BaseModel):
    """A key to create. ``kns`` / ``kgs``: the networks / KGs it covers (``null``: all, ``[]``: none)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, pattern=NAME_RE.pattern,
                      description="what the audit log shows; letters, digits, _ . : @ -")
    scope: Scope = Field(description="read, write (changes) or admin (changes and keys)")
    kns: list[GraphId] | None = Field(default=None, max_length=1000, description="networks covered; null: all")
    kgs: list[GraphId] | None = Field(default=None, max_length=1000, description="KGs covered; null: all")
    rate_per_minute: int = Field(default=0, ge=0, le=1_000_000, description="0: the server's default")
    max_body_bytes: int = Field(default=0, ge=0, le=1 << 30, description="0: the server's default")


@dataclass(frozen=True)
class KeyCreated(KeyInfo):
    """A key just created, with its token (:class:`kgrag.access.keys.KeyInfo` plus ``token``)."""

    token: Annotated[str, Field(description="Authorization: Bearer <token>; shown this once")] = ""


def _admin(request: Request) -> Grant:
    grant = require_admin(request)
    if grant is OPEN:
        raise HTTPException(403, "this server has no key yet: create the first one with `kgrag keys create` "
                                 "(an open server does not hand out keys)")
    return grant


def _covered(grant: Grant, info: KeyInfo) -> bool:
    return grant.covers(info.kns, info.kgs)


@router.get("/api/keys", response_model=list[KeyInfo], responses=ERRORS)
def list_keys(request: Request) -> Any:
    """Every key the calling admin key covers (revoked ones too, with when), oldest first; never a token."""
    grant = _admin(request)
    try:
        return [k.as_dict() for k in key_store_of(request.app).list() if _covered(grant, k)]
    except (OperationalError, InterfaceError) as exc:
        raise HTTPException(503, database_unavailable("keys", exc)) from exc


@router.post("/api/keys", status_code=201, response_model=KeyCreated,
             responses={**ERRORS, 409: {"description": "a key with this name exists"}})
def create_key(body: KeyIn, request: Request) -> Any:
    """Create a key within what the calling admin key covers; its token is in this answer only."""
    grant = _admin(request)
    if not grant.covers(body.kns, body.kgs):
        raise HTTPException(403, f"key {grant.name!r} may not hand out networks or KGs it does not cover itself")
    try:
        keys = key_store_of(request.app)
        try:
            token, info = keys.create(body.name, body.scope, body.kns, body.kgs, body.rate_per_minute,
                                      body.max_body_bytes, created_by=grant.name)
        except ValueError as exc:
            raise HTTPException(409 if "exists already" in str(exc) else 422, str(exc)) from exc
        AuditLog(keys.engine).append(grant.name, "key.create", "key", info.name, None, info.key_id,
                                     {"scope": info.scope, "kns": info.kns, "kgs": info.kgs})
    except (OperationalError, InterfaceError) as exc:
        raise HTTPException(503, database_unavailable("keys", exc)) from exc
    return {**info.as_dict(), "token": token}


@router.post("/api/keys/{name}/revoke", response_model=KeyInfo,
             responses={**ERRORS, 404: {"description": "no such key (or one the caller does not cover)"},
                        409: {"description": "revoked already, or the calling key itself"}})
def revoke_key(name: KeyName, request: Request) -> Any:
    """Revoke a key the calling admin key covers (it stays listed, with when); every server refuses it within
    seconds."""
    grant = _admin(request)
    try:
        keys = key_store_of(request.app)
        found = next((k for k in keys.list() if k.name == name), None)
        if found is None or not _covered(grant, found):
            raise HTTPException(404, f"no key named {name!r}")
        if name == grant.name:
            raise HTTPException(409, f"key {name!r} cannot revoke itself: use another admin key or "
                                     "`kgrag keys revoke`")
        try:
            info = keys.revoke(name)
        except ValueError as exc:
            raise HTTPException(409, str(exc)) from exc
        AuditLog(keys.engine).append(grant.name, "key.revoke", "key", name, info.key_id, None)
    except (OperationalError, InterfaceError) as exc:
        raise HTTPException(503, database_unavailable("keys", exc)) from exc
    return info.as_dict()
