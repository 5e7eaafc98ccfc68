"""kgrag's scheduled deployments, read from ``deployments/prefect.yaml`` (one file for `prefect deploy` and for us).

    specs = load_specs()                                  # validated: entrypoints, cron schedules, parameters
    runners = runner_deployments(specs)                   # Prefect RunnerDeployments (no server needed to build)
    serve_all(runners)                                    # every deployment in this process (``kgrag deploy serve``)
    apply_all(runners)                                    # register with PREFECT_API_URL (``kgrag deploy apply``)

Each deployment's parameters are checked against its flow's signature when loaded, so a typo in the YAML is an
error before anything is scheduled.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import yaml
from prefect import serve
from prefect.client.schemas.schedules import CronSchedule
from prefect.flows import Flow
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kgrag.config import REPO_ROOT
from kgrag.errors import KgragError

__all__ = ["DEFAULT_FILE", "DeploymentSpec", "ScheduleSpec", "load_specs", "load_flow", "runner_deployments",
           "serve_all", "apply_all"]

DEFAULT_FILE = REPO_ROOT / "deployments" / "prefect.yaml"


class ScheduleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cron: str
    timezone: str = "UTC"

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        CronSchedule(cron=value, timezone="UTC")  # raises on a bad expression
        return value

    def schedule(self) -> CronSchedule:
        return CronSchedule(cron=self.cron, timezone=self.timezone)


class DeploymentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    entrypoint: str = Field(pattern=r"^[\w/]+\.py:\w+$", description="path/to/file.py:flow_function")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)
    schedules: list[ScheduleSpec] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    work_pool: dict[str, Any] = Field(default_factory=dict)


def load_flow(entrypoint: str) -> Flow:
    """The flow object of ``flows/x.py:fn`` (imported as the module ``flows.x``)."""
    path, _, name = entrypoint.partition(":")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    found = getattr(module, name, None)
    if not isinstance(found, Flow):
        raise KgragError(f"{entrypoint}: not a Prefect flow")
    return found


def load_specs(path: Path = DEFAULT_FILE) -> list[DeploymentSpec]:
    """The deployments of ``path``, validated (names unique, flows importable, parameters the flow accepts)."""
    if not Path(path).is_file():
        raise KgragError(f"deployments file not found: {path}")
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    specs = [DeploymentSpec.model_validate(d) for d in raw.get("deployments", [])]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise KgragError(f"{path}: deployment names repeat: {names}")
    for spec in specs:
        try:
            load_flow(spec.entrypoint).validate_parameters(spec.parameters)
        except Exception as error:  # a bad parameter name or type: say which deployment
            raise KgragError(f"{path}: deployment {spec.name!r}: {error}") from error
    return specs


def runner_deployments(specs: list[DeploymentSpec]) -> list:
    """One Prefect RunnerDeployment per spec, with its schedules, parameters, description and tags."""
    out = []
    for spec in specs:
        out.append(load_flow(spec.entrypoint).to_deployment(
            name=spec.name, schedules=[s.schedule() for s in spec.schedules], parameters=spec.parameters,
            description=spec.description or None, tags=spec.tags))
    return out


def serve_all(runners: list, limit: int | None = None) -> None:
    """Run every deployment's schedule in this process until stopped (Prefect's ``serve``: no worker)."""
    serve(*runners, limit=limit)


def apply_all(runners: list, specs: list[DeploymentSpec]) -> list[str]:
    """Register each deployment with the server at ``PREFECT_API_URL`` in its work pool; returns their ids."""
    return [str(runner.apply(work_pool_name=spec.work_pool.get("name"))) for runner, spec in
            zip(runners, specs, strict=True)]
