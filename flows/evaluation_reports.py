"""The nightly evaluation reports: ``kgrag eval`` and ``kgrag agent-eval`` on configured question files, in one
flow run whose artifacts hold every figure with its denominator.

Per run:
- the policy on the ``split``'s g_agent (``kgrag eval --split``; subflow ``evaluate``);
- the held-out ``split`` written as MetaQA-format files, one per hop (``work/<dataset>/hrag/eval/files/``), plus
  each of ``question_files``; on each file the whole chain (``kgrag eval --questions``; subflow) and, with
  ``agent``, the LangGraph agent in-process (``kgrag agent-eval --kg``; task ``agent-eval-<file>``), the topics
  linked from the text when ``no_brackets``.

Artifacts: table ``evaluation-<dataset>`` (one row per source and path: n, Hits@1, Hit, F1, agent p50 ms) and
markdown ``evaluation-<dataset>-summary``; the answer reports stay under ``work/<dataset>/hrag/eval/``.
Run: ``python -m flows.evaluation_reports --dataset metaqa [--question-file PATH …] [--no-agent] [--limit N]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.artifact_keys import artifact_key
from flows.evaluate import evaluate
from graphs.agent.context import AgentContext
from graphs.agent.graph import graph
from kgrag.agent.evaluation.evaluate import evaluate as agent_evaluate
from kgrag.agent.evaluation.evaluate import read_metaqa
from kgrag.config import get_settings
from kgrag.errors import KgragError
from kgrag.hrag.retrieval import pipeline
from kgrag.hrag.retrieval.questions import write_split_files
from kgrag.hrag.retrieval.stage_inputs import load_graph

COLUMNS = ("source", "path", "n", "hits@1", "hit", "f1", "p50_ms")


@task(name="agent-eval", cache_policy=NO_CACHE)
def agent_eval(dataset: str, questions: str, no_brackets: bool, limit: int | None) -> dict:
    """The agent graph in-process (LLM-free unless configured) on one MetaQA-format file: n, Hits@1, Hit, F1, p50."""
    items, _ = read_metaqa(Path(questions), no_brackets)
    items = items[:limit] if limit else items
    context = AgentContext(kg=dataset)
    report = agent_evaluate(items, lambda q: graph.invoke({"question": q, "kg": dataset}, context=context))
    return {k: report["figures"][k] for k in ("n", "hits@1", "hit", "f1", "p50_ms")}


def _row(source: str, path: str, figures: dict) -> dict:
    return {c: figures.get(c) for c in COLUMNS} | {"source": source, "path": path}


@flow(name="evaluation-reports", log_prints=True)
def evaluation_reports(dataset: str = "metaqa", split: str = "validation", question_files: list[str] | None = None,
                       agent: bool = True, no_brackets: bool = True, limit: int | None = None) -> dict:
    """Answers of the latest checkpoints on ``split`` and on question files, by the reasoner and the agent."""
    settings = get_settings()
    missing = [f for f in question_files or [] if not Path(f).is_file()]
    if missing:
        raise KgragError(f"question files not found: {', '.join(missing)}")
    rows = []
    on_split = evaluate(dataset=dataset, split=split)
    rows += [_row(f"{split} g_agent, {name}", "kgrag eval", figures) for name, figures in on_split["report"].items()]
    graph = load_graph(settings, dataset)
    held_out = write_split_files(settings.dataset_dir(dataset), split, graph,
                                 pipeline.hrag_dir(settings, dataset) / "eval" / "files")
    files = [str(p) for p in held_out.values()] + list(question_files or [])
    for path in files:
        name = Path(path).name
        chain = evaluate(dataset=dataset, questions=path, no_brackets=no_brackets)
        rows.append(_row(name, "kgrag eval --questions" + (" --no-brackets" if no_brackets else ""),
                         chain["report"]["all"]))
        if agent:
            figures = agent_eval.with_options(task_run_name=f"agent-eval-{Path(path).stem}")(
                dataset, path, no_brackets, limit)
            rows.append(_row(name, "kgrag agent-eval --kg" + (" --no-brackets" if no_brackets else ""), figures))
    for row in rows:
        row.update({k: round(v, 4) for k, v in row.items() if isinstance(v, float)})
    title = f"Evaluation of {dataset} ({split} split and {len(files)} question files)"
    create_table_artifact(table=rows, key=artifact_key("evaluation", dataset), description=title)
    lines = [f"# {title}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in COLUMNS) + " |" for r in rows]
    create_markdown_artifact(key=artifact_key("evaluation", dataset, "summary"), description=title, markdown="\n".join(lines) + "\n")
    return {"rows": rows, "files": files}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Nightly evaluation reports: kgrag eval and agent-eval.")
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--split", default="validation")
    parser.add_argument("--question-file", action="append", default=[], help="a MetaQA-format file (repeatable)")
    parser.add_argument("--no-agent", action="store_true")
    parser.add_argument("--brackets", action="store_true", help="keep the [topic] marks (default: strip them)")
    parser.add_argument("--limit", type=int, default=None, help="agent: the first N questions per file")
    args = parser.parse_args(argv)
    result = evaluation_reports(dataset=args.dataset, split=args.split, question_files=args.question_file,
                                agent=not args.no_agent, no_brackets=not args.brackets, limit=args.limit)
    print(json.dumps(result["rows"], indent=1))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)
