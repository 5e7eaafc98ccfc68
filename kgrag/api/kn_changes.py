"""Change a knowledge network in place over HTTP: upsert and delete instances and links (issue 45 §1).

    PUT  /api/kn/{kn_id}/instances          {"instances": [{"object_type_id": "Book", "id": "b9",
                                                            "properties": {"title": "Emma", "year": 1815}}]}
    POST /api/kn/{kn_id}/instances/delete   {"instances": [{"object_type_id": "Book", "id": "b9"}]}
    PUT  /api/kn/{kn_id}/links              {"links": [{"relation_type_id": "wrote", "source_id": "a1",
                                                        "target_id": "b9"}]}
    POST /api/kn/{kn_id}/links/delete       {"links": [{"relation_type_id": "wrote", "source_id": "a1", …}]}
    POST /api/kn/{kn_id}/changes            {"upsert_instances": […], "delete_instances": […],
                                             "upsert_links": […], "delete_links": […]}   # all four, one transaction

Each call is one transaction (:meth:`NetworkStore.apply_changes`): all of it is applied, with one new network
version (none when nothing changed), or none of it. An upsert inserts an instance or replaces the one with the
same ``(object_type_id, id)``; deleting an instance deletes its links; deleting an instance or link that is not
there is not an error. ``/changes`` exists so an instance and the links to it can arrive together. Every served
process sees the new version on its next request.

Deletes are ``POST …/delete`` with a body rather than ``DELETE`` with one: a body on ``DELETE`` has no defined
meaning (RFC 9110 §9.3.5) and proxies and HTTP clients drop it.

The answer is the store's :class:`~kgrag.network.store.changes.ChangeStats` (counts, the version after, seconds).
Errors (FastAPI's ``{"detail": …}``): an unknown ``kn_id`` 404; a row the store rejects (unknown object or relation
type, a link whose endpoint is missing after the change, a key twice in one call) 400 naming it, nothing applied;
a body that does not validate (a missing field, an empty id) 422 naming the field; a batch over
:data:`MAX_BATCH` rows 422; a body over ``KGRAG_MAX_BODY_BYTES`` 413; the database unreachable 503. Behind the
API key like every route (:mod:`kgrag.api.security`): a key that may not read the network gets its 404, one that
may read but not write a 403; each change that made a new version is appended to the audit log
(:mod:`kgrag.access.audit`) under the key's name, in the change's own transaction (both commit or neither).
"""

from __future__ import annotations

from typing import Annotated, Any, cast

from fastapi import APIRouter, HTTPException, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DataError, IntegrityError, InterfaceError, OperationalError

from kgrag.access.audit import AuditLog
from kgrag.api.access import require_kn
from kgrag.api.kn_search import app_network_store, database_unavailable
from kgrag.errors import KgragError, NetworkNotFound
from kgrag.network.schema.model import Instance, Link
from kgrag.network.store import NetworkStore
from kgrag.network.store.changes import ChangeStats, NetworkChanges

__all__ = ["MAX_BATCH", "router"]

router = APIRouter(tags=["kn-changes"])

#: the most rows one call may carry (all lists of a ``/changes`` call together are bounded by the body limit)
MAX_BATCH = 10_000

#: ids as the store keeps them (kgrag.network.schema.tables): non-empty, bounded, no NUL (PostgreSQL text cannot
#: hold one)
TypeId = Annotated[str, Field(min_length=1, max_length=300, pattern=r"^[^\x00]+$")]
ItemId = Annotated[str, Field(min_length=1, max_length=1000, pattern=r"^[^\x00]+$")]
KnId = Annotated[str, Path(min_length=1, max_length=200, description="the network's id (kgrag kn list)")]

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "a row the store rejects (named); nothing applied"},
    404: {"description": "unknown kn_id"},
    413: {"description": "body larger than KGRAG_MAX_BODY_BYTES"},
    503: {"description": "database unavailable"},
}


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InstanceIn(_Body):
    """An instance to insert, or to replace the one with the same ``(object_type_id, id)``."""

    object_type_id: TypeId
    id: ItemId
    properties: dict[str, Any] = Field(default_factory=dict, description="property name -> value (JSON)")


class InstanceKey(_Body):
    object_type_id: TypeId
    id: ItemId


class LinkIn(_Body):
    relation_type_id: TypeId
    source_id: ItemId
    target_id: ItemId


class InstancesUpsert(_Body):
    instances: list[InstanceIn] = Field(max_length=MAX_BATCH, description=f"at most {MAX_BATCH}")


class InstancesDelete(_Body):
    instances: list[InstanceKey] = Field(max_length=MAX_BATCH, description=f"at most {MAX_BATCH}")


class LinksBatch(_Body):
    links: list[LinkIn] = Field(max_length=MAX_BATCH, description=f"at most {MAX_BATCH}")


class ChangesIn(_Body):
    """Every kind of change at once (one transaction)."""

    upsert_instances: list[InstanceIn] = Field(default_factory=list, max_length=MAX_BATCH)
    delete_instances: list[InstanceKey] = Field(default_factory=list, max_length=MAX_BATCH)
    upsert_links: list[LinkIn] = Field(default_factory=list, max_length=MAX_BATCH)
    delete_links: list[LinkIn] = Field(default_factory=list, max_length=MAX_BATCH)


class ChangeStatsOut(BaseModel):
    """What one change did (:class:`kgrag.network.store.changes.ChangeStats`)."""

    kn_id: str
    version: str = Field(description="the network's version after the change (unchanged when nothing changed)")
    instances_inserted: int
    instances_updated: int
    instances_deleted: int
    instances_unchanged: int
    links_inserted: int
    links_deleted: int
    full_reload: bool
    note: str
    seconds: float


def _instances(rows: list[InstanceIn]) -> list[Instance]:
    return [Instance(object_type_id=r.object_type_id, id=r.id, properties=r.properties) for r in rows]


def _links(rows: list[LinkIn]) -> list[Link]:
    return [Link(relation_type_id=r.relation_type_id, source_id=r.source_id, target_id=r.target_id) for r in rows]


def _apply(request: Request, kn_id: str, changes: NetworkChanges) -> dict[str, Any]:
    """``apply_changes`` with the routes' error contract (see the module docstring)."""
    try:
        grant = require_kn(request, kn_id, write=True)  # 404 for a network the key may not read, 403 read-only
        store = cast(NetworkStore, app_network_store(request.app))  # the app's store is a NetworkStore
        log = AuditLog(store.engine)

        def audit(conn: Connection, before: str, stats: ChangeStats) -> None:  # in the change's transaction
            log.append(grant.name, "kn.changes", "kn", kn_id, before, stats.version, stats.counts(), conn=conn)

        return store.apply_changes(kn_id, changes, on_write=audit).as_dict()
    except NetworkNotFound as exc:
        raise HTTPException(404, f"knowledge network {kn_id!r} not found") from exc
    except (ValueError, KgragError, DataError, IntegrityError) as exc:  # a rejected row: nothing applied
        orig = getattr(exc, "orig", None) or exc
        message = " ".join(str(orig).split()) or type(orig).__name__
        raise HTTPException(400, f"change rejected, nothing applied: {message}") from exc
    except (OperationalError, InterfaceError) as exc:
        raise HTTPException(503, database_unavailable("kn changes", exc)) from exc


@router.put("/api/kn/{kn_id}/instances", response_model=ChangeStatsOut, responses=ERRORS)
def upsert_instances(kn_id: KnId, body: InstancesUpsert, request: Request) -> Any:
    """Insert instances, or replace those with the same ``(object_type_id, id)`` (one transaction; only changed
    rows are re-indexed)."""
    return _apply(request, kn_id, NetworkChanges(upsert_instances=_instances(body.instances)))


@router.post("/api/kn/{kn_id}/instances/delete", response_model=ChangeStatsOut, responses=ERRORS)
def delete_instances(kn_id: KnId, body: InstancesDelete, request: Request) -> Any:
    """Delete instances by ``(object_type_id, id)``, with their links (one transaction)."""
    keys = [(r.object_type_id, r.id) for r in body.instances]
    return _apply(request, kn_id, NetworkChanges(delete_instances=keys))


@router.put("/api/kn/{kn_id}/links", response_model=ChangeStatsOut, responses=ERRORS)
def upsert_links(kn_id: KnId, body: LinksBatch, request: Request) -> Any:
    """Add links (both endpoints must be instances of the network; a link already there is kept once)."""
    return _apply(request, kn_id, NetworkChanges(upsert_links=_links(body.links)))


@router.post("/api/kn/{kn_id}/links/delete", response_model=ChangeStatsOut, responses=ERRORS)
def delete_links(kn_id: KnId, body: LinksBatch, request: Request) -> Any:
    """Delete links by ``(relation_type_id, source_id, target_id)`` (one transaction)."""
    return _apply(request, kn_id, NetworkChanges(delete_links=_links(body.links)))


@router.post("/api/kn/{kn_id}/changes", response_model=ChangeStatsOut, responses=ERRORS)
def apply_changes(kn_id: KnId, body: ChangesIn, request: Request) -> Any:
    """Upserts and deletes of instances and links together, in one transaction."""
    return _apply(request, kn_id, NetworkChanges(
        upsert_instances=_instances(body.upsert_instances),
        delete_instances=[(r.object_type_id, r.id) for r in body.delete_instances],
        upsert_links=_links(body.upsert_links), delete_links=_links(body.delete_links)))
