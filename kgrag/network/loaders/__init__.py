"""Loaders: each builds ``(KnowledgeNetwork, instances, links)`` for :meth:`NetworkStore.load`."""

from __future__ import annotations

import re

from kgrag.errors import KgragError
from kgrag.network.schema.model import Instance, KnowledgeNetwork, Link

#: what every loader returns
NetworkData = tuple[KnowledgeNetwork, list[Instance], list[Link]]

__all__ = ["NetworkData", "check_kn_id"]

#: a network id: a letter or digit, then letters, digits, ``_``, ``.`` or ``-`` (64 at most; any script's letters)
_KN_ID = re.compile(r"\w[\w.-]{0,63}")


def check_kn_id(kn_id: str, what: str = "kn_id") -> str:
    """``kn_id`` when it is a usable network id, else :class:`KgragError` saying why (one line)."""
    if not kn_id or not kn_id.strip():
        raise KgragError(f"{what} is empty")
    if not _KN_ID.fullmatch(kn_id) or kn_id.startswith("_"):
        raise KgragError(f"{what} {kn_id!r} is not a valid network id: use up to 64 letters, digits, '_', '.' or "
                         "'-', starting with a letter or digit")
    return kn_id
