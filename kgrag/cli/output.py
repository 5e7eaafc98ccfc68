"""Where the commands print: ``console`` (stdout), ``err_console`` (stderr), and the wrappers that turn a user's
error into one red line on stderr and exit code 1 (no traceback).

    @friendly_errors
    def command(...) -> None: ...
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from kgrag.errors import KgragError, NetworkNotFound

__all__ = ["console", "err_console", "friendly_errors", "network_errors", "print_error"]

console = Console()
err_console = Console(stderr=True)
F = TypeVar("F", bound=Callable)


def print_error(message: str) -> None:
    """``error: message`` in one line however long (the terminal wraps it; rich would break it at 80 columns off a
    terminal), printed as it is (a message may hold [brackets])."""
    err_console.print(f"[bold red]error:[/] {escape(' '.join(message.split()))}", highlight=False, soft_wrap=True)


def friendly_errors(fn: F) -> F:
    """Turn a :class:`KgragError` (and a failed SPARQL/LLM call) into one clear line and exit code 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KgragError as exc:
            print_error(str(exc))
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def network_errors(fn: F) -> F:
    """``kgrag kn …``: turn KgragError / ValueError / NetworkNotFound into one red line and exit code 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except NetworkNotFound as exc:
            err_console.print(
                f"[bold red]error:[/] no knowledge network {escape(repr(exc.args[0]))} is loaded "
                "(see `kgrag kn list`, load one with `kgrag kn load`)",
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(1) from None
        except (KgragError, ValueError) as exc:
            print_error(str(exc))
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]
