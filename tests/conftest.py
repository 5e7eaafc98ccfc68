"""Shared pytest setup: fixtures live in tests/fixtures/ and are registered here."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

pytest_plugins = [
    "fixtures.llm_server",
    "fixtures.oxigraph_server",
    "fixtures.virtuoso_server",
    "fixtures.settings",
    "fixtures.prefect_harness",
    "fixtures.kg_tools",
    "fixtures.freebase_kg",
    "fixtures.medical_kn",
    "fixtures.langgraph_server",
    "fixtures.demo_kg",
    "fixtures.postgres",
]
