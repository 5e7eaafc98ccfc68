"""The knowledge-network store contract (:mod:`harness.conformance.network_store`) on every backend: SQLite files and
databases of a throwaway PostgreSQL cluster (``fixtures/postgres``' ``pg_cluster``, which fails the test when the
server binaries are missing). One class per backend, each providing the suite's ``new_database`` fixture.

    .venv/bin/python -m pytest -q tests/test_conformance_network_store.py -k Postgres
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from harness.conformance.network_store import NetworkStoreContract
from harness.servers.postgres import PostgresCluster


class TestSQLiteNetworkStore(NetworkStoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def new_database(cls, tmp_path_factory: pytest.TempPathFactory) -> Callable[[], str]:
        return lambda: f"sqlite:///{tmp_path_factory.mktemp('kn-sqlite') / 'kn.db'}"


class TestPostgresNetworkStore(NetworkStoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def new_database(cls, pg_cluster: PostgresCluster) -> Callable[[], str]:
        numbers = itertools.count()
        return lambda: pg_cluster.create_database(f"conformance_{next(numbers)}")
