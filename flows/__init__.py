"""Prefect flows: thin wiring of kgrag functions into tasks."""

import os

# No telemetry from the ephemeral Prefect server (these machines have no internet; it would only log errors).
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")  # set INFO to see every task state
# The ephemeral API migrates a fresh database on its first start: allow it more than the default 20 s.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

import logging  # noqa: E402
import sys  # noqa: E402

import prefect.main  # noqa: E402,F401  - configures Prefect's logging (its console handler on the root logger)
from prefect.logging.handlers import PrefectConsoleHandler  # noqa: E402

from kgrag.errors import KgragError  # noqa: E402


def _user_error_names() -> set[str]:
    names, todo = set(), [KgragError]
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return names


class UserErrorConsoleFilter(logging.Filter):
    """Keeps Prefect's task/flow failure records about a :class:`KgragError` (a missing data file or checkpoint: a
    message that says what to do) off the console: the caller prints the message as one line (``kgrag …``, and
    ``python -m flows.…`` through :func:`run_main`). The run's logs in the Prefect API keep them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], KgragError):
            return False
        if record.levelno >= logging.ERROR and record.name.startswith("prefect.") and record.exc_info is None:
            # "Finished in state Failed('Task run encountered an exception DataNotFoundError: …')"
            message = record.getMessage()
            if message.startswith("Finished in state Failed") and any(
                    f" {name}: " in message for name in _user_error_names()):
                return False
        return True


def quiet_user_errors() -> None:
    """Put :class:`UserErrorConsoleFilter` on Prefect's console handler(s) (idempotent)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler) and not any(
                isinstance(f, UserErrorConsoleFilter) for f in handler.filters):
            handler.addFilter(UserErrorConsoleFilter())


quiet_user_errors()


def run_main(main) -> None:  # noqa: ANN001 - a flow module's argparse main
    """``python -m flows.<name>``: run ``main()``; a :class:`KgragError` ends it as one line on stderr, exit 1."""
    try:
        main()
    except KgragError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        raise SystemExit(1) from None
