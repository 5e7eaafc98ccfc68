"""Option values turned into checked inputs, shared by the commands: a dataset name, a ``--config`` JSON object of
a pydantic model's fields, the agent's ``--style``. The checks a flow run by a deployment needs too live in the
library (:func:`kgrag.data.registry.dataset_spec`, :func:`kgrag.data.question_files.require_question_file`).

    dataset_of("demo")   # the demo KG's DatasetSpec, or one error line naming the known datasets

A command resolves its ``--dataset`` / ``--kg`` name here, once, and passes the spec down (to the stores, the KG
tools, the flows), never the name.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from kgrag.config import get_settings
from kgrag.errors import KgragError

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.data.spec import DatasetSpec

__all__ = ["LLMStyle", "config_overrides", "dataset_of"]


class LLMStyle(StrEnum):
    kg_query = "kg-query"
    tools = "tools"


def dataset_of(name: str) -> DatasetSpec:
    """The spec of the built-in or registered dataset ``name`` (the command's one resolution of it); else a
    one-line error naming the known ones."""
    from kgrag.data.registry import dataset_spec  # on use: the dataset readers cost `kgrag --help` ~25 ms

    return dataset_spec(name, get_settings())


def config_overrides(config: str | None, model: type[BaseModel], **fields: int | str | None) -> dict:
    """``--config`` JSON plus the explicit options, validated by ``model``."""
    try:
        overrides = json.loads(config) if config else {}
    except json.JSONDecodeError as exc:
        raise KgragError(f"--config is not valid JSON: {exc}") from None
    if not isinstance(overrides, dict):
        raise KgragError(f"--config must be a JSON object of {model.__name__} fields")
    overrides.update({k: v for k, v in fields.items() if v is not None})
    try:
        return model(**overrides).model_dump()
    except ValidationError as exc:
        raise KgragError(f"invalid {model.__name__}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None
