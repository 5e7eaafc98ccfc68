"""Scoped access to the served graphs: API keys that may read, write or administer named networks and KGs
(:mod:`~kgrag.access.keys`, :mod:`~kgrag.access.grants`), the append-only log of every change
(:mod:`~kgrag.access.audit`) and per-key request limits (:mod:`~kgrag.access.limits`).

    token, info = KeyStore(make_engine(settings.db_url)).create("agent-a", "read", kns=["library"])
"""
