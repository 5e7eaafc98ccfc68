"""Intent-ranker training flow, from labelled questions or from the network itself.

``source="self"`` (any stored network, no labelled question): :func:`kgrag.agent.training.train_self_intent.
train_self_intent` synthesises questions from the network's schema and instances and trains the self-supervised
ranker; a markdown artifact gives the counts and example questions.

``source="labelled"`` (the medical network's CE-Prompt questions): thin wrapper of
:func:`kgrag.agent.training.train_intent.train_intent`: reads
``<data_dir>/medical/questions_cypher_train.json`` (+ the raw disease records for the gold answers), counts
the skipped queries by reason, splits the distinct question texts 90/10 per label (``Settings.seed``), trains
the question → property/relation ranker and evaluates it on the validation split next to the majority class
and the 30-line baseline. Saves ``<work_dir>/checkpoints/intent/<config fingerprint>/`` (model, split, gold
JSONL, metrics, confusion PNG) and ``checkpoints/intent/medical-latest.json``; publishes a markdown accuracy
table and a confusion table (with the PNG) as Prefect artifacts. A finished run with the same config and data
returns at once.

Run: ``python -m flows.train_intent [--source self --kn demo] [--config '{"C": 20}'] [--force]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.artifact_keys import artifact_key
from kgrag.agent.kn.intent import IntentConfig
from kgrag.agent.training.train_intent import accuracy_markdown, confusion_markdown
from kgrag.agent.training.train_intent import train_intent as run_training
from kgrag.agent.training.train_self_intent import train_self_intent
from kgrag.config import get_settings
from kgrag.errors import KgragError, NetworkNotFound
from kgrag.hrag.evaluate import png_markdown
from kgrag.network.store import NetworkStore


def _log(line: str) -> None:
    # progress goes straight to stderr: print() inside a task becomes a Prefect INFO log, hidden at WARNING
    sys.stderr.write(line + "\n")


@task(name="train-intent-ranker", cache_policy=NO_CACHE)
def train(config_json: str, force: bool, questions: str | None = None) -> dict:
    return run_training(get_settings(), IntentConfig.model_validate_json(config_json), force=force, log=_log,
                        questions=Path(questions) if questions else None)


@task(name="train-self-intent-ranker", cache_policy=NO_CACHE)
def train_self(kn_id: str, config_json: str, per_candidate: int, force: bool) -> dict:
    return train_self_intent(get_settings(), kn_id, IntentConfig.model_validate_json(config_json),
                             per_candidate=per_candidate, force=force, log=_log)


def _self_markdown(result: dict) -> str:
    rows = "\n".join(f"| {e['label']} | {e['question']} |" for e in result["examples"])
    return (f"# Self-supervised intent ranker, network `{result['kn_id']}`\n\nrun `{result['run_dir']}`, "
            f"{result['candidates']} candidates, {result['questions']} synthetic questions over {result['labels']} "
            f"labels ({result['questions_by_kind']}), {result['n_features']} n-grams, trained in "
            f"{result['train_seconds']:.2f} s ({result['seconds']:.1f} s in all); no labelled question read\n\n"
            f"| label | example synthetic question |\n|---|---|\n{rows}\n")


def require_network(kn_id: str) -> None:
    """Self-supervised training needs the stored network: one clear line when it is not loaded (``kgrag
    train-intent`` checks before the flow starts; a deployment's run fails with the same line)."""
    store = NetworkStore(get_settings().db_url)
    try:
        store.get_network(kn_id)
    except NetworkNotFound:
        raise KgragError(f"no knowledge network {kn_id!r} is loaded (see `kgrag kn list`; load one with "
                         "`kgrag kn load NAME|PATH.yaml`)") from None
    finally:
        store.close()


@flow(name="train-intent", log_prints=True)
def train_intent(config: dict | None = None, force: bool = False, source: str = "labelled", kn_id: str = "medical",
                 questions: str | None = None, per_candidate: int = 48) -> dict:
    """Train the question → schema-element ranker from labelled questions or from the network itself (see the
    module docstring)."""
    if source not in ("labelled", "self"):
        raise ValueError(f"source must be 'labelled' or 'self', not {source!r}")
    cfg = IntentConfig(**(config or {}))
    if source == "self":
        require_network(kn_id)
        result = train_self(kn_id, cfg.model_dump_json(), per_candidate, force)
        create_markdown_artifact(key=artifact_key("intent-self", kn_id),
                                 description=f"Self-supervised intent ranker ({kn_id})",
                                 markdown=_self_markdown(result))
        return result
    result = train(cfg.model_dump_json(), force, questions)
    title = f"Intent ranker, medical validation (n={result['validation']['n']})"
    create_markdown_artifact(
        key="intent-ranker-accuracy", description=title,
        markdown=(f"# {title}\n\nrun `{result['run_dir']}`, ranker `{result['fingerprint']}`, "
                  f"{result['examples']} usable questions, {result['skipped_total']} skipped\n\n"
                  f"{accuracy_markdown(result)}\n\n## Skipped queries\n\n```json\n"
                  f"{json.dumps(result['skipped'], ensure_ascii=False, indent=1)}\n```\n"))
    png = Path(result["confusion_png"])
    create_markdown_artifact(
        key="intent-ranker-confusion", description="Confusion of the most frequent labels (validation)",
        markdown=(f"# Intent ranker confusion (rows gold, columns predicted)\n\n"
                  f"{confusion_markdown(result['validation']['confusion'])}\n\n"
                  + (png_markdown(png) if png.is_file() else "") + "\n"))
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train the question → property/relation ranker.")
    parser.add_argument("--source", choices=("labelled", "self"), default="labelled")
    parser.add_argument("--kn", default="medical", help="with --source self: the stored network")
    parser.add_argument("--config", default=None, help="JSON object of IntentConfig fields")
    parser.add_argument("--force", action="store_true", help="retrain even when this config already finished")
    args = parser.parse_args(argv)
    result = train_intent(config=json.loads(args.config) if args.config else None, force=args.force,
                          source=args.source, kn_id=args.kn)
    if args.source == "self":
        print(_self_markdown(result))
        return
    print(accuracy_markdown(result))
    keep = ("run_dir", "fingerprint", "examples", "skipped_total", "split", "majority_accuracy", "baseline",
            "noise", "train_seconds", "seconds", "cached")
    print(json.dumps({k: result[k] for k in keep if k in result}, ensure_ascii=False, default=str))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)
