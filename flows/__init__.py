"""Prefect flows: thin wiring of kgrag functions into tasks."""

import os

# No telemetry from the ephemeral Prefect server (these machines have no internet; it would only log errors).
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")  # set INFO to see every task state
