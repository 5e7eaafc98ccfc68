"""Prefect flows: thin wiring of kgrag functions into tasks."""

import os

# No telemetry from the ephemeral Prefect server (these machines have no internet; it would only log errors).
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")  # set INFO to see every task state
# The ephemeral API migrates a fresh database on its first start: allow it more than the default 20 s.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
