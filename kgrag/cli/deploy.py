"""``kgrag deploy …``: the scheduled deployments of the offline flows (deployments/prefect.yaml): list them, serve
them in this process, or register them with a Prefect server.

    kgrag deploy list; kgrag deploy serve --limit 1
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from kgrag.cli.output import console, friendly_errors

__all__ = ["deploy_app"]

deploy_app = typer.Typer(help="Scheduled deployments of the offline flows (deployments/prefect.yaml).",
                         no_args_is_help=True)


@deploy_app.command("list")
@friendly_errors
def deploy_list(
    file: Annotated[Path | None, typer.Option(help="Deployments file (default: deployments/prefect.yaml).")] = None,
) -> None:
    """Print every deployment: its flow, schedule (UTC cron) and parameters, validated against the flow."""
    from kgrag.ops.deployments import DEFAULT_FILE, load_specs

    table = Table(title=str(file or DEFAULT_FILE))
    for column in ("deployment", "flow entrypoint", "schedule", "parameters"):
        table.add_column(column)
    for spec in load_specs(file or DEFAULT_FILE):
        table.add_row(spec.name, spec.entrypoint, ", ".join(f"{s.cron} {s.timezone}" for s in spec.schedules),
                      json.dumps(spec.parameters))
    console.print(table)


@deploy_app.command("serve")
@friendly_errors
def deploy_serve(
    file: Annotated[Path | None, typer.Option(help="Deployments file (default: deployments/prefect.yaml).")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Flow runs at once at most.")] = None,
) -> None:
    """Run every deployment on its schedule in this process (Prefect's serve: no worker), until stopped."""
    from kgrag.ops.deployments import DEFAULT_FILE, load_specs, runner_deployments, serve_all

    serve_all(runner_deployments(load_specs(file or DEFAULT_FILE)), limit=limit)


@deploy_app.command("apply")
@friendly_errors
def deploy_apply(
    file: Annotated[Path | None, typer.Option(help="Deployments file (default: deployments/prefect.yaml).")] = None,
) -> None:
    """Register every deployment with the Prefect server at PREFECT_API_URL (a `process` worker runs them)."""
    from kgrag.ops.deployments import DEFAULT_FILE, apply_all, load_specs, runner_deployments

    specs = load_specs(file or DEFAULT_FILE)
    for spec, deployment_id in zip(specs, apply_all(runner_deployments(specs), specs), strict=True):
        console.print(f"{spec.name}: {deployment_id}")
