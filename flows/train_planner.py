"""Plan-scorer training flow: thin wrapper of :func:`kgrag.reading.train.train_planner` — real human questions over
Spider's databases as networks (``<data_dir>/spider_train``), split by database (seeded), a gradient-boosted scorer
of (question, candidate plan), its confidence calibrated on the validation databases.

Saves ``<work_dir>/checkpoints/planner/<fingerprint>/`` (``forest.npz``, ``planner.joblib``, ``meta.json``, the
rules' calibrator)
and points ``checkpoints/planner/current`` at it (the agent's :func:`kgrag.reading.scorer.load_scorer` reads it
there, before the model shipped in the package); publishes the validation figures, the calibration and the
risk–coverage table as a markdown artifact. The held-out databases are scored only with ``held_out=True``.

Run: ``python -m flows.train_planner [--seed 13] [--held-out]`` (or ``kgrag train-planner``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from kgrag.config import get_settings
from kgrag.errors import KgragError
from kgrag.reading.train import train_planner as run_training


def _progress(stage: str, done: int, total: int) -> None:
    # plain periodic lines on stderr (a task's print() is a Prefect log, hidden at WARNING)
    if done == total or done % 100 == 0:
        sys.stderr.write(f"train-planner {stage}: {done}/{total} questions\n")


def require_corpus(root: Path) -> None:
    if not root.is_dir() or not any(root.glob("*/questions.jsonl")):
        raise KgragError(f"no question corpus at {root}: the Spider databases as networks (shared/data/spider_train, "
                         "see its README for the source and the conversion); pass --data DIR")


@task(name="train-plan-scorer", cache_policy=NO_CACHE)
def train(root: str, out: str, seed: int, max_iter: int, held_out: bool) -> dict[str, Any]:
    return run_training(Path(root), Path(out), seed=seed, max_iter=max_iter, progress=_progress, held_out=held_out)


def markdown(meta: dict[str, Any]) -> str:
    f = meta["figures"]
    rows = []
    for name in ("validation", "validation_rules", "held_out", "held_out_rules"):
        if name in f:
            c = f[name].get("calibration", {})
            rows.append(f"| {name} | {f[name]['n']} | {f[name]['f1']} | {f[name]['exact']} | {c.get('ece')} | "
                        f"{c.get('right_at_0.8')} | {c.get('wrong_at_0.8')} |")
    curve = "\n".join(f"| {r['threshold']} | {r['coverage']} | {r['accuracy']} |"
                      for r in f["validation"]["calibration"]["risk_coverage"])
    return (f"# Plan scorer `{meta['fingerprint']}` (seed {meta['seed']})\n\n"
            f"{len(meta['split']['train'])} train / {len(meta['split']['validation'])} validation / "
            f"{len(meta['split']['held_out'])} held-out databases; {meta['candidates']} training candidates; "
            f"{meta['seconds']} s\n\n| set | questions | F1 | exact | ECE | right at ≥0.8 | wrong at ≥0.8 |\n"
            f"|---|---|---|---|---|---|---|\n" + "\n".join(rows)
            + f"\n\nDefault abstention threshold (right ≥ 90 % on validation): {f['min_confidence_for_90']}\n\n"
            f"## Risk–coverage (validation, learned)\n\n| threshold | coverage | accuracy |\n|---|---|---|\n{curve}\n")


@flow(name="train-planner", log_prints=True)
def train_planner(data: str | None = None, seed: int = 13, max_iter: int = 600, held_out: bool = False) -> dict:
    """Train the plan scorer and make it current (see the module docstring)."""
    settings = get_settings()
    root = Path(data) if data else settings.data_dir / "spider_train"
    require_corpus(root)
    base = settings.checkpoint_dir / "planner"
    staging = base / "staging"
    shutil.rmtree(staging, ignore_errors=True)
    meta = train(str(root), str(staging), seed, max_iter, held_out)
    final = base / meta["fingerprint"]
    shutil.rmtree(final, ignore_errors=True)
    staging.rename(final)
    current = base / "current"
    if current.is_symlink() or current.is_file():
        current.unlink()
    elif current.is_dir():
        shutil.rmtree(current)
    current.symlink_to(final.name)
    meta["run_dir"] = str(final)
    create_markdown_artifact(key="planner-scorer", description="Plan scorer: validation figures and calibration",
                             markdown=markdown(meta))
    return meta


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train the plan scorer on Spider's databases as networks.")
    parser.add_argument("--data", default=None)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--held-out", action="store_true")
    args = parser.parse_args(argv)
    meta = train_planner(data=args.data, seed=args.seed, held_out=args.held_out)
    print(markdown(meta))
    print(json.dumps({"run_dir": meta["run_dir"], "fingerprint": meta["fingerprint"]}))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)
