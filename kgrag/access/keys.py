"""API keys with scopes, stored hashed in the network store's database (``kgrag_api_keys``, created on first use;
SQLite by default, PostgreSQL with ``KGRAG_DATABASE_URL``).

    keys = KeyStore(make_engine(settings.db_url))
    token, info = keys.create("agent-a", "read", kns=["library"])    # the token is shown once, never stored
    keys.verify(token)   # -> Grant("agent-a", "read", kns=frozenset({"library"}), …); keys.revoke("agent-a")

A token is ``kgr_<key id>_<secret>``: 12 hex characters naming the row and 256 random bits (``secrets``). The row
keeps a random salt and ``HMAC-SHA256(salt, token)`` (the standard library's ``hmac``): a key carries 256 bits of
entropy, so a keyed fast hash resists guessing as well as a slow password hash would, and checking one costs
microseconds per request. :meth:`KeyStore.verify` compares digests in constant time and runs the same HMAC for a
malformed token or an unknown key id, so neither answers faster. A verified token is remembered for
:data:`CACHE_SECONDS` (a revoke is seen within that time by every process); a revoked key stays listed with its
revocation time. Bad input (an unknown scope, a name or id out of bounds, a name already used) is a ``ValueError``
naming it; nothing is written.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import (
    Column,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from kgrag.access.grants import OPEN, SCOPES, Grant, Scope
from kgrag.tables_once import create_once

__all__ = ["CACHE_SECONDS", "KeyInfo", "KeyStore", "LEGACY_GRANT", "MISS", "TOKEN_PREFIX", "api_keys", "cli_actor"]

TOKEN_PREFIX = "kgr"
#: :meth:`KeyStore.resolve_cached`'s answer when only the database can tell
MISS = object()
#: the grant of ``KGRAG_API_KEY``: admin over every network and KG
LEGACY_GRANT = Grant("KGRAG_API_KEY", "admin")
#: how long a verified token (and whether any key exists) is trusted before the database is asked again
CACHE_SECONDS = 2.0
MAX_TOKEN_CHARS = 512
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,99}$")
TOKEN_RE = re.compile(rf"^{TOKEN_PREFIX}_([0-9a-f]{{12}})_[A-Za-z0-9_-]{{43}}$")
_DUMMY_SALT = bytes(16)

metadata = MetaData()
api_keys = Table(
    "kgrag_api_keys",
    metadata,
    Column("key_id", String(12), primary_key=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("salt", String(32), nullable=False),
    Column("digest", String(64), nullable=False),
    Column("scope", String(10), nullable=False),
    Column("kns", Text, nullable=True),  # JSON list; NULL: every network
    Column("kgs", Text, nullable=True),  # JSON list; NULL: every KG
    Column("rate_per_minute", Integer, nullable=False, default=0),
    Column("max_body_bytes", Integer, nullable=False, default=0),
    Column("created_at", Float, nullable=False),
    Column("created_by", String(200), nullable=False),
    Column("revoked_at", Float, nullable=True),
)



def cli_actor() -> str:
    """Who a command-line change is attributed to: ``cli:<user>``."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name (a container without one): still attributable to the CLI
        user = "unknown"
    return f"cli:{user}"


@dataclass(frozen=True)
class KeyInfo:
    """A key as listed (never its token)."""

    name: str
    key_id: str
    scope: str
    kns: list[str] | None
    kgs: list[str] | None
    rate_per_minute: int
    max_body_bytes: int
    created_at: float
    created_by: str
    revoked_at: float | None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _names(values: Sequence[str] | None, what: str) -> list[str] | None:
    if values is None or "*" in values:
        return None
    out = []
    for v in values:
        if not isinstance(v, str) or not v.strip() or len(v) > 200 or "\x00" in v:
            raise ValueError(f"{what} {v!r}: an id of 1 to 200 characters")
        out.append(v.strip())
    return sorted(set(out))


def _bearer(authorization: bytes | str | None) -> bytes:
    """The header as bytes, its scheme normalised to ``Bearer `` (case-insensitive, RFC 7235)."""
    given = authorization.encode("utf-8", "surrogateescape") if isinstance(authorization, str) else (
        authorization or b"")
    if given[:7].lower() == b"bearer ":
        given = b"Bearer " + given[7:].strip()
    return given


def _token(authorization: bytes | str | None, legacy_key: str) -> str | Grant | None:
    """:data:`LEGACY_GRANT` for ``Bearer <legacy_key>`` (constant-time), ``None`` for a header that is no bearer
    token, else the token to verify."""
    given = _bearer(authorization)
    if legacy_key and hmac.compare_digest(given, f"Bearer {legacy_key}".encode()):
        return LEGACY_GRANT
    if not given.startswith(b"Bearer "):
        return None
    return given[7:].decode("utf-8", "replace")


def _digest(salt: bytes, token: str) -> str:
    return hmac.new(salt, token.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


class KeyStore:
    """The ``kgrag_api_keys`` table of one database (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        create_once(engine, metadata)
        self._lock = threading.Lock()
        self._verified: dict[str, tuple[Grant, float]] = {}  # sha256 of a token -> (grant, when checked)
        self._any: tuple[bool, float] | None = None

    # ------------------------------------------------------------------ management
    def create(self, name: str, scope: Scope, kns: Sequence[str] | None = None, kgs: Sequence[str] | None = None,
               rate_per_minute: int = 0, max_body_bytes: int = 0, created_by: str = "") -> tuple[str, KeyInfo]:
        """A new key: ``(token, info)``. ``kns`` / ``kgs``: the networks / KGs it covers (``None`` or ``["*"]``:
        all). The token exists only in the return value."""
        if not NAME_RE.match(name or ""):
            raise ValueError(f"key name {name!r}: 1 to 100 letters, digits or _ . : @ -, starting with a letter "
                             "or digit")
        if scope not in SCOPES:
            raise ValueError(f"scope {scope!r}: one of {', '.join(SCOPES)}")
        if rate_per_minute < 0 or max_body_bytes < 0:
            raise ValueError("rate_per_minute and max_body_bytes are >= 0 (0: the server's default)")
        kn_list, kg_list = _names(kns, "kn"), _names(kgs, "kg")
        key_id = secrets.token_hex(6)
        token = f"{TOKEN_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
        salt = secrets.token_bytes(16)
        row = {"key_id": key_id, "name": name, "salt": salt.hex(), "digest": _digest(salt, token), "scope": scope,
               "kns": None if kn_list is None else json.dumps(kn_list),
               "kgs": None if kg_list is None else json.dumps(kg_list),
               "rate_per_minute": rate_per_minute, "max_body_bytes": max_body_bytes, "created_at": time.time(),
               "created_by": created_by or cli_actor(), "revoked_at": None}
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(api_keys).values(**row))
        except IntegrityError as exc:
            raise ValueError(f"a key named {name!r} exists already (kgrag keys list)") from exc
        self._any = None
        return token, self._info(row)

    def list(self, include_revoked: bool = True) -> list[KeyInfo]:
        with self.engine.connect() as conn:
            query = select(api_keys).order_by(api_keys.c.created_at, api_keys.c.name)
            if not include_revoked:
                query = query.where(api_keys.c.revoked_at.is_(None))
            return [self._info(r._mapping) for r in conn.execute(query)]

    def revoke(self, name: str) -> KeyInfo:
        """Revoke the key ``name`` (it stays listed); ``KeyError`` when there is none, ``ValueError`` when it is
        revoked already."""
        with self.engine.begin() as conn:
            row = conn.execute(select(api_keys).where(api_keys.c.name == name)).first()
            if row is None:
                raise KeyError(f"no key named {name!r} (kgrag keys list)")
            if row.revoked_at is not None:
                raise ValueError(f"key {name!r} was revoked already")
            now = time.time()
            conn.execute(update(api_keys).where(api_keys.c.key_id == row.key_id).values(revoked_at=now))
        with self._lock:
            self._verified.clear()
            self._any = None
        return self._info({**row._mapping, "revoked_at": now})

    def any_active(self) -> bool:
        """Whether any key is not revoked (cached for :data:`CACHE_SECONDS`): the server asks for keys then."""
        now = time.monotonic()
        cached = self._any
        if cached is not None and now - cached[1] < CACHE_SECONDS:
            return cached[0]
        with self.engine.connect() as conn:
            count = conn.execute(select(func.count()).select_from(api_keys)
                                 .where(api_keys.c.revoked_at.is_(None))).scalar_one()
        self._any = (bool(count), now)
        return bool(count)

    # ------------------------------------------------------------------ checking a token
    def verify(self, token: str) -> Grant | None:
        """The grant of ``token``, or ``None`` (malformed, unknown, revoked): see the module docstring."""
        if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS:
            _digest(_DUMMY_SALT, "")
            return None
        fingerprint = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        now = time.monotonic()
        with self._lock:
            hit = self._verified.get(fingerprint)
        if hit is not None and now - hit[1] < CACHE_SECONDS:
            return hit[0]
        match = TOKEN_RE.match(token)
        row = None
        if match:
            with self.engine.connect() as conn:
                row = conn.execute(select(api_keys).where(api_keys.c.key_id == match.group(1))).first()
        salt = bytes.fromhex(row.salt) if row is not None else _DUMMY_SALT
        computed = _digest(salt, token)  # always computed: a malformed or unknown token costs the same
        if row is None or not hmac.compare_digest(computed, row.digest) or row.revoked_at is not None:
            return None
        grant = self._grant(row._mapping)
        with self._lock:
            if len(self._verified) > 10_000:
                self._verified.clear()
            self._verified[fingerprint] = (grant, now)
        return grant

    def resolve_cached(self, authorization: bytes | str | None, legacy_key: str = "") -> Grant | None | object:
        """:meth:`resolve` from memory alone (no database read: what a request's event loop may call):
        :data:`MISS` when it would need the database (a token not verified in the last seconds, whether any key
        exists not known)."""
        if not legacy_key:
            cached = self._any
            if cached is None or time.monotonic() - cached[1] >= CACHE_SECONDS:
                return MISS
            if not cached[0]:
                return OPEN
        token = _token(authorization, legacy_key)
        if not isinstance(token, str):
            return token
        hit = self._verified.get(hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest())
        return hit[0] if hit is not None and time.monotonic() - hit[1] < CACHE_SECONDS else MISS

    def resolve(self, authorization: bytes | str | None, legacy_key: str = "") -> Grant | None:
        """The grant of an ``Authorization`` header: :data:`~kgrag.access.grants.OPEN` when no key exists (no
        ``legacy_key``, none active here), :data:`LEGACY_GRANT` for ``Bearer <legacy_key>`` (compared in constant
        time), a scoped key's grant, else ``None`` (a key is needed and this is not one). The scheme is
        case-insensitive (RFC 7235)."""
        if not legacy_key and not self.any_active():
            return OPEN
        token = _token(authorization, legacy_key)
        return self.verify(token) if isinstance(token, str) else token

    @staticmethod
    def _info(row) -> KeyInfo:  # noqa: ANN001 - a row mapping or a dict
        return KeyInfo(name=row["name"], key_id=row["key_id"], scope=row["scope"],
                       kns=None if row["kns"] is None else json.loads(row["kns"]),
                       kgs=None if row["kgs"] is None else json.loads(row["kgs"]),
                       rate_per_minute=int(row["rate_per_minute"] or 0), max_body_bytes=int(row["max_body_bytes"] or 0),
                       created_at=float(row["created_at"]), created_by=row["created_by"],
                       revoked_at=row["revoked_at"])

    @staticmethod
    def _grant(row) -> Grant:  # noqa: ANN001
        return Grant(name=row["name"], scope=row["scope"],
                     kns=None if row["kns"] is None else frozenset(json.loads(row["kns"])),
                     kgs=None if row["kgs"] is None else frozenset(json.loads(row["kgs"])),
                     rate_per_minute=int(row["rate_per_minute"] or 0), max_body_bytes=int(row["max_body_bytes"] or 0))
