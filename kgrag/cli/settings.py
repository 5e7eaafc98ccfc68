"""``kgrag config``: the effective settings, every API key masked.

    kgrag config | grep KGRAG_WORK_DIR
"""

from __future__ import annotations

from pydantic import SecretStr

from kgrag.cli.output import console
from kgrag.config import get_settings

__all__ = ["show_config"]


def show_config() -> None:
    """Print the effective settings (KGRAG_* environment, .env, defaults); every API key is masked."""
    settings = get_settings()
    for key, value in settings.model_dump().items():
        if key.endswith("api_key"):  # llm_api_key, rerank_api_key, api_key (a SecretStr)
            secret = value.get_secret_value() if isinstance(value, SecretStr) else value
            value = "***" if secret else ""
        console.print(f"KGRAG_{key.upper()}={value}", highlight=False, markup=False, soft_wrap=True)
