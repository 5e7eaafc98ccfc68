"""What a route lets the caller's key touch (:class:`kgrag.access.grants.Grant`, set on the request by
:mod:`kgrag.api.security`; without the middleware — the LangGraph server's app — everything).

    require_kn(request, kn_id)                 # NetworkNotFound when the key may not read it (the routes' 404)
    require_kn(request, kn_id, write=True)     # and 403 when it may read but not write

A network or KG the key may not read is reported exactly like one that does not exist (404, the same message),
so a key cannot learn which others are served.
"""

from __future__ import annotations

from fastapi import HTTPException, Request

from kgrag.access.grants import Grant, grant_of
from kgrag.errors import NetworkNotFound

__all__ = ["grant_of", "require_admin", "require_kg", "require_kn"]


def require_kn(request: Request, kn_id: str, write: bool = False) -> Grant:
    grant = grant_of(request)
    if not grant.can_read_kn(kn_id):
        raise NetworkNotFound(kn_id)
    if write and not grant.can_write_kn(kn_id):
        raise HTTPException(403, f"key {grant.name!r} may read knowledge network {kn_id!r} but not change it")
    return grant


def require_kg(request: Request, kg: str, write: bool = False) -> Grant:
    """A KG the key may not read: 404 as for a KG not served."""
    grant = grant_of(request)
    if not grant.can_read_kg(kg):
        raise HTTPException(404, f"kg {kg!r} is not prepared here; run `kgrag prepare --dataset {kg}`")
    if write and not grant.can_write_kg(kg):
        raise HTTPException(403, f"key {grant.name!r} may read kg {kg!r} but not change it")
    return grant


def require_admin(request: Request) -> Grant:
    grant = grant_of(request)
    if not grant.is_admin:
        raise HTTPException(403, f"key {grant.name!r} is not an admin key")
    return grant
