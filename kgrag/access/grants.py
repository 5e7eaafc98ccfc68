"""What one caller may do: a :class:`Grant` names a scope (``read`` ⊂ ``write`` ⊂ ``admin``) and the networks and
KGs it covers (``None``: all of them, present and future).

    grant = Grant("agent-a", "read", kns=frozenset({"library"}))
    grant.can_read_kn("library"), grant.can_write_kn("library"), grant.can_read_kn("medical")  # True False False

Contract: a grant that cannot read a network or KG behaves as if it did not exist (the routes answer 404, never
403, so a key learns nothing of the graphs it may not see); one that can read but not write gets 403 on a change.
``admin`` may write everything it covers and manage keys. :data:`OPEN` is the grant of a server without keys
(no ``KGRAG_API_KEY``, no key created): everything, named ``anonymous``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["SCOPES", "Grant", "OPEN", "Scope", "covered", "grant_of"]

Scope = Literal["read", "write", "admin"]
SCOPES: tuple[Scope, ...] = ("read", "write", "admin")
_RANK = {s: i for i, s in enumerate(SCOPES)}


def covered(names: frozenset[str] | None, name: str) -> bool:
    """Whether ``name`` is among ``names`` (``None``: every name)."""
    return names is None or name in names


@dataclass(frozen=True)
class Grant:
    """See the module docstring. ``rate_per_minute`` / ``max_body_bytes``: the key's own limits (0: the server's)."""

    name: str
    scope: Scope
    kns: frozenset[str] | None = None
    kgs: frozenset[str] | None = None
    rate_per_minute: int = 0
    max_body_bytes: int = 0

    def at_least(self, scope: Scope) -> bool:
        return _RANK[self.scope] >= _RANK[scope]

    @property
    def is_admin(self) -> bool:
        return self.scope == "admin"

    def can_read_kn(self, kn_id: str) -> bool:
        return covered(self.kns, kn_id)

    def can_write_kn(self, kn_id: str) -> bool:
        return self.at_least("write") and covered(self.kns, kn_id)

    def can_read_kg(self, kg: str) -> bool:
        return covered(self.kgs, kg)

    def can_write_kg(self, kg: str) -> bool:
        return self.at_least("write") and covered(self.kgs, kg)

    def covers(self, kns: Iterable[str] | None, kgs: Iterable[str] | None) -> bool:
        """Whether every network and KG named (``None``: all of them) is within this grant's (what an admin key may
        hand out or revoke: never more than it has)."""
        return all(mine is None or (theirs is not None and set(theirs) <= mine)
                   for mine, theirs in ((self.kns, kns), (self.kgs, kgs)))

    def readable(self) -> dict[str, tuple[str, ...] | None]:
        """The agent's run-context fields for this grant: ``readable_kns`` / ``readable_kgs`` (None: all)."""
        return {"readable_kns": None if self.kns is None else tuple(sorted(self.kns)),
                "readable_kgs": None if self.kgs is None else tuple(sorted(self.kgs))}

    def readable_kns(self, kn_ids: Iterable[str]) -> list[str]:
        return [k for k in kn_ids if self.can_read_kn(k)]

    def readable_kgs(self, kgs: Iterable[str]) -> list[str]:
        return [k for k in kgs if self.can_read_kg(k)]


#: the grant of a server without keys
OPEN = Grant("anonymous", "admin")


def grant_of(request: Any) -> Grant:
    """The grant the security middleware put on a Starlette/FastAPI ``request`` (``request.state.kgrag_grant``);
    :data:`OPEN` on an app without it (the LangGraph server's)."""
    return getattr(request.state, "kgrag_grant", OPEN)
