"""Data-prep flow: dataset → vocabularies + CSR graph → N-Triples → Oxigraph store → resolved questions → summary.

Run: ``python -m flows.prepare_data --dataset metaqa`` or ``kgrag prepare --dataset metaqa``; a user's own graph:
``kgrag prepare --dataset NAME --triples kg.nt.gz --questions q.jsonl`` (prepared in a staging folder, swapped in
and registered only when every step succeeded: :mod:`kgrag.prep.imports`).
Each step is a task; steps are idempotent (manifest in the dataset's work folder) and cached on their inputs
(the dataset fingerprint plus the recorded state of their outputs, so deleting outputs invalidates the cache).
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_image_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.artifact_keys import artifact_key
from kgrag.config import get_settings
from kgrag.data.spec import DatasetSpec
from kgrag.errors import KgragError
from kgrag.fileio import png_data_url
from kgrag.graph.versions.version_file import new_version, read_version, write_version
from kgrag.prep import imports, steps
from kgrag.prep.chart import write_chart
from kgrag.prep.manifest import state_token, step_is_current
from kgrag.prep.summary import summary_rows, write_summary


def _cache_key(step: str):
    def key(context, parameters: dict) -> str:  # noqa: ARG001 - Prefect's cache_key_fn signature
        out_dir = Path(parameters["out_dir"])
        return f"{step}:{parameters['fingerprint']}:{out_dir}:{state_token(out_dir, step)}"

    return key


def _not_a_user_error(task, task_run, state) -> bool:  # noqa: ARG001 - Prefect's retry_condition_fn signature
    """Retry a step that failed on the machine (I/O), never one that failed on the user's input (a KgragError:
    malformed files, unknown nodes), which would fail the same way again."""
    return not isinstance(state.result(raise_on_failure=False), KgragError)


@task(name="fingerprint-inputs", cache_policy=NO_CACHE)
def fingerprint_inputs(spec: DatasetSpec, data_dir: str) -> str:
    return steps.input_fingerprint(spec, Path(data_dir))


@task(name="build-graph", retries=2, retry_delay_seconds=2, retry_condition_fn=_not_a_user_error,
      cache_key_fn=_cache_key("graph"),
      cache_expiration=timedelta(days=30), persist_result=True)
def build_graph(spec: DatasetSpec, data_dir: str, out_dir: str, fingerprint: str, previous: str | None = None,
                strict: bool = False) -> dict:
    return steps.build_graph(spec, Path(data_dir), Path(out_dir), fingerprint,
                             previous=Path(previous) if previous else None, strict=strict)


@task(name="load-oxigraph", retries=2, retry_delay_seconds=2, cache_key_fn=_cache_key("store"),
      cache_expiration=timedelta(days=30), persist_result=True)
def load_store(out_dir: str, fingerprint: str, enabled: bool = True) -> dict:
    return steps.load_store(Path(out_dir), fingerprint, enabled)


@task(name="prepare-questions", retries=2, retry_delay_seconds=2, retry_condition_fn=_not_a_user_error,
      cache_key_fn=_cache_key("questions"),
      cache_expiration=timedelta(days=30), persist_result=True)
def prepare_questions(spec: DatasetSpec, data_dir: str, out_dir: str, fingerprint: str, seed: int) -> dict:
    return steps.prepare_questions(spec, Path(data_dir), Path(out_dir), fingerprint, seed=seed)


@task(name="summarise", cache_policy=NO_CACHE)
def summarise(dataset: str, out_dir: str, graph: dict, store: dict, questions: dict) -> str:
    markdown = write_summary(Path(out_dir), dataset, graph, store, questions)
    key = artifact_key("data-prep", dataset)
    create_markdown_artifact(markdown=markdown, key=key, description=f"Data-prep summary for {dataset}")
    create_table_artifact(
        table=[{"item": k, "value": v} for k, v in summary_rows(dataset, graph, store, questions)],
        key=artifact_key(key, "table"),
        description=f"Data-prep counts for {dataset}",
    )
    chart = write_chart(Path(out_dir), dataset)
    create_image_artifact(image_url=png_data_url(chart), key=artifact_key(key, "chart"),
                          description=f"{dataset}: triples per relation, questions per split and hop")
    return markdown


@flow(name="prepare-data", log_prints=True)
def prepare_data(dataset: str = "metaqa", data_dir: str | None = None, work_dir: str | None = None,
                 seed: int | None = None, spec: dict | None = None, strict: bool = False) -> dict:
    """Prepare one dataset: a built-in or registered one by name, or the graph ``spec`` describes (an import:
    :class:`~kgrag.data.spec.DatasetSpec` fields); returns the summary counts. ``strict``: the first malformed
    statement or line (graph or questions) fails the flow with ``file:line: reason``; nothing is registered."""
    settings = get_settings()
    if work_dir:
        settings = settings.model_copy(update={"work_dir": Path(work_dir)})
    the_spec = DatasetSpec.model_validate(spec) if spec else steps.spec_of(dataset, settings)
    dataset = the_spec.name
    data = str(Path(data_dir) if data_dir else settings.data_dir)
    fp = fingerprint_inputs(the_spec, data)
    staging = imports.staging_dir(settings, the_spec, fp)
    out = str(staging or settings.dataset_dir(dataset))
    unchanged = all(step_is_current(Path(out), step, fp) for step in imports.PREP_STEPS)
    try:
        previous = settings.dataset_dir(dataset) if staging is not None else None  # a re-import: diff against it
        graph = build_graph(the_spec, data, out, fp, str(previous) if previous and previous.is_dir() else None,
                            strict)
        if strict:  # also a cached result of an earlier, lenient run
            steps.check_strict("graph", graph)
        store = load_store(out, fp, the_spec.store)
        questions = prepare_questions(the_spec, data, out, fp, settings.seed if seed is None else seed)
        if strict:
            steps.check_strict("questions", questions)
        markdown = summarise(dataset, out, graph, store, questions)
        if not (unchanged and read_version(Path(out))):  # a new version: every serving process follows it
            write_version(Path(out), new_version(), store="oxigraph" if store.get("store_path") else None)
    except BaseException:
        imports.discard(staging)  # the dataset's folder and registration stay as they were
        raise
    if staging is not None:
        out = str(imports.commit(settings, the_spec, staging))
        if store.get("store_path"):
            store = {**store, "store_path": str(Path(out) / "oxigraph")}
    return {"dataset": dataset, "out_dir": out, "graph": graph, "store": store, "questions": questions,
            "markdown": markdown}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Prepare a dataset: CSR graph, Oxigraph store, questions.")
    parser.add_argument("--dataset", default="metaqa", help="a built-in or registered dataset")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--strict", action="store_true", help="fail on the first malformed statement or line")
    args = parser.parse_args(argv)
    try:  # fail fast, with one clear line, before any Prefect machinery starts
        steps.check_inputs(args.dataset, Path(args.data_dir) if args.data_dir else get_settings().data_dir)
    except KgragError as exc:
        raise SystemExit(f"error: {exc}") from None
    result = prepare_data(dataset=args.dataset, data_dir=args.data_dir, work_dir=args.work_dir, strict=args.strict)
    print(result["markdown"])


if __name__ == "__main__":
    from flows import run_main

    run_main(main)
