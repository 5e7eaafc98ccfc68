"""Option values turned into checked inputs, shared by the commands: a dataset name, a ``--config`` JSON object of
a pydantic model's fields, the agent's ``--style``. The checks a flow run by a deployment needs too live in the
library (:func:`kgrag.data.registry.dataset_spec`, :func:`kgrag.data.question_files.require_question_file`).

    known_dataset("demo")   # "demo", or one error line naming the known datasets
"""

from __future__ import annotations

import json
from enum import StrEnum

from pydantic import BaseModel, ValidationError

from kgrag.config import get_settings
from kgrag.errors import KgragError

__all__ = ["LLMStyle", "config_overrides", "known_dataset"]


class LLMStyle(StrEnum):
    kg_query = "kg-query"
    tools = "tools"


def known_dataset(name: str) -> str:
    """``name`` when it is a built-in or registered dataset; else a one-line error naming the known ones."""
    from kgrag.data.registry import dataset_spec

    return dataset_spec(name, get_settings()).name


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
