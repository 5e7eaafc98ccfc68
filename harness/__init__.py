"""Test and benchmark support, not part of the shipped package: what tests/ and bench/ need around the product.

- :mod:`harness.servers` — real servers launched as child processes on free loopback ports and always stopped
  (``oxigraph serve``, Virtuoso, PostgreSQL, a Prefect server, ``langgraph dev``, ``kgrag serve``);
- :mod:`harness.conformance` — backend conformance suites: one contract, one set of test functions, run against
  every backend of the network store (SQLite, PostgreSQL) and of the SPARQL graph store (embedded, served,
  Virtuoso) by tests/test_conformance_*.py;
- :mod:`harness.screenshot` — the docs' Prefect UI screenshot.

It lives beside ``kgrag/`` at the repository root and is importable from there only: pytest puts the root on
``sys.path`` (``pythonpath`` in pyproject's pytest settings) and ``python -m bench`` runs from it; the wheel
packages only ``kgrag``, ``flows`` and ``graphs`` (``[tool.setuptools.packages.find]``). Nothing in those three
imports it (tests/test_architecture.py checks).

    python -c "from harness.servers.ports import free_port; print(free_port())"
"""
