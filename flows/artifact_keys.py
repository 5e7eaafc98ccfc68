"""Prefect artifact keys, derived: a key may hold only lowercase letters, digits and dashes, while a dataset name
or a network id may hold ``_`` ``.`` and capitals, so every key a flow makes from one goes through
:func:`artifact_key`.

    artifact_key("data-prep", "my_kg", "chart")   # "data-prep-my-kg-chart"
"""

from __future__ import annotations

import re

__all__ = ["artifact_key"]

_NOT_ALLOWED = re.compile(r"[^a-z0-9]+")


def artifact_key(*parts: str, max_length: int | None = None) -> str:
    """``parts`` joined by dashes as a slug (lowercase; each run of other characters, dashes included, one dash;
    no dash at either end), cut to ``max_length`` when given; ``"artifact"`` when nothing is left."""
    key = _NOT_ALLOWED.sub("-", "-".join(parts).lower()).strip("-")
    if max_length is not None:
        key = key[:max_length].rstrip("-")
    return key or "artifact"
