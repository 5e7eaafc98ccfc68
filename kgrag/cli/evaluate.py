"""The evaluation stages: ``kgrag retriever-eval`` (the retriever's recall, writing g_agent), ``kgrag eval``
(H-RAG's answers) and ``kgrag agent-eval`` (the agent's answers on a question file); each prints its table and,
with ``--json``, its figures on the last line.

    kgrag retriever-eval --dataset demo --questions q.txt --json; kgrag agent-eval --questions q.json --kn medical
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress

from kgrag.cli.above import above
from kgrag.cli.agent import agent_answerer
from kgrag.cli.inputs import LLMStyle, dataset_of
from kgrag.cli.output import console, err_console, friendly_errors
from kgrag.config import get_settings
from kgrag.errors import KgragError
from kgrag.progress import stage
from kgrag.terminal.tables import figures_table

__all__ = ["agent_eval_cmd", "eval_cmd", "retriever_eval_cmd"]


@friendly_errors
def retriever_eval_cmd(
    questions: Annotated[Path | None, typer.Option(help="Question file: MetaQA lines (question<TAB>a1|a2), JSONL {question, topic_entities, answers}, WebQSP or CWQ JSON.")] = None,
    hop: Annotated[int | None, typer.Option(help="Hop count of the file's questions (default: from its path).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object with the figures on the last line.")] = False,
    dataset: Annotated[str, typer.Option(help="Prepared dataset (graph + trained retriever). (kgrag kg list)")] = "metaqa",
    split: Annotated[str | None, typer.Option(help="Without --questions: one split, e.g. test (default: the "
                                              "training budget's train and validation questions).")] = None,
    checkpoint: Annotated[Path | None, typer.Option(help="Retriever checkpoint (default: the latest trained).")] = None,
    max_questions: Annotated[int | None, typer.Option(min=0, help="With --split: a seeded sample of this many of "
                                                      "its questions (0 = all).")] = None,
) -> None:
    """Evaluate the trained retriever: answer recall@K and shortest-path triple recall@K (K = 50, 100, 200, 500) per
    hop. With --questions, on that file; else on the questions the training budget names (train and validation
    caps; the test split only with --split test), also writing <split>_g_agent.pt; a run killed midway continues
    from its last finished part."""
    from kgrag.data.question_files import require_question_file
    from kgrag.hrag.retrieval.metrics import flat_metrics, report_table

    if hop is not None and hop < 0:
        raise KgragError("--hop must be >= 0")
    require_question_file(questions)  # the flow checks it too; here before Prefect starts
    spec = dataset_of(dataset)
    flow = above("flows.retriever_eval")
    from kgrag.ops.task_runner import on_task_runner

    if questions is not None:
        result = on_task_runner(flow.retriever_eval_file)(dataset=spec, questions=str(questions), hop=hop,
                                                     checkpoint=str(checkpoint) if checkpoint else None)
        info = result["info"]
        if not json_out:
            console.print(f"{info['questions']} questions from {questions} ({info['malformed_lines']} malformed lines, "
                          f"{info['unresolved_topic']} with an unknown topic entity left out)")
        print(report_table(result["report"]))
        if json_out:
            print(json.dumps(flat_metrics(result["report"])))
        return
    if max_questions is not None and split is None:
        raise KgragError("--max-questions needs --split (the train and validation caps are the training budget's)")
    with stage(f"kgrag retriever-eval --dataset {dataset}"):
        result = on_task_runner(flow.retriever_eval)(dataset=spec, run_all_splits=split is None,
                                                     split=split or "test",
                                                     checkpoint=str(checkpoint) if checkpoint else None,
                                                     max_questions=max_questions)
    for name, part in result.items():
        console.print(f"[bold]{name}[/] (g_agent: {part['g_agent']})")
        print(report_table(part["report"]))
    if json_out:
        print(json.dumps({name: flat_metrics(part["report"]) for name, part in result.items()}))


@friendly_errors
def eval_cmd(
    questions: Annotated[Path | None, typer.Option(help="Question file: MetaQA lines (question<TAB>a1|a2), JSONL {question, topic_entities, answers}, WebQSP or CWQ JSON.")] = None,
    hop: Annotated[int | None, typer.Option(help="Hop count of the file's questions (default: from its path).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print {n, hits@1, hit, f1} (with --questions also answer_seconds) as JSON on the last line.")] = False,
    dataset: Annotated[str, typer.Option(help="Prepared dataset (graph + trained retriever and policy). (kgrag kg list)")] = "metaqa",
    split: Annotated[str, typer.Option(help="Without --questions: the g_agent split to answer.")] = "validation",
    no_brackets: Annotated[bool, typer.Option("--no-brackets", help="With --questions: strip the [topic] marks and "
                                              "link the topic entities from the text.")] = False,
) -> None:
    """Answer questions with the latest retriever + GFlowNet policy and print Hits@1 / Hit / F1 per hop. With
    --questions the whole chain runs on the file (PPR → retriever + chain prior → g_agent → policy → answers)."""
    evaluate = above("flows.evaluate").evaluate
    from kgrag.data.question_files import require_question_file
    from kgrag.hrag.gflownet.evaluate import metrics_table
    from kgrag.ops.task_runner import on_task_runner

    if hop is not None and hop < 0:
        raise KgragError("--hop must be >= 0")
    require_question_file(questions)  # the flow checks it too; here before Prefect starts
    if no_brackets and questions is None:
        raise KgragError("--no-brackets needs --questions (a g_agent split has its topics already)")
    with stage(f"kgrag eval --dataset {dataset}"):
        result = on_task_runner(evaluate)(dataset=dataset_of(dataset), split=split,
                                          questions=str(questions) if questions else None, hop=hop,
                                          no_brackets=no_brackets)
    info = result["info"]
    if questions is not None and not json_out:
        console.print(f"{info['questions']} questions from {questions} ({info['malformed_lines']} malformed lines "
                      f"skipped; {info['unresolved_topic']} with an unknown topic entity counted as misses)")
        if no_brackets:
            console.print(f"topics linked from the text: {info['linked_wrong']} linked to another entity, "
                          f"{info['unlinked']} not linked (counted as misses)")
    print(metrics_table(result["report"]))
    if json_out:
        print(json.dumps(result["figures"]))


@friendly_errors
def agent_eval_cmd(
    questions: Annotated[Path, typer.Option(help="CE-Prompt JSON ([{input, cypher}]) or JSONL of {question, answers}; "
                                            "with --kg: JSONL {question, topic_entities, answers}, MetaQA lines "
                                            "(question<TAB>a1|a2), WebQSP or CWQ JSON.")],
    kn: Annotated[str, typer.Option(help="Network id (kgrag kn list).")] = "medical",
    kg: Annotated[str | None, typer.Option(help="A KG instead of a network (metaqa, demo, an import: kgrag kg list).")] = None,
    no_brackets: Annotated[bool, typer.Option("--no-brackets", help="With --kg: strip the [topic] marks; the agent "
                                              "links the topic from the text.")] = False,
    style: Annotated[LLMStyle, typer.Option(help="With --kg and an LLM: <kg-query> text or tool calls.")] = LLMStyle.kg_query,
    out: Annotated[Path | None, typer.Option(help="Write one prediction per line (JSONL) here.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print {n, hit, f1, exact, topic_acc, p50_ms} as JSON "
                                           "on the last line.")] = False,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N questions.")] = None,
    llm: Annotated[bool | None, typer.Option("--llm/--no-llm", help="Plan with the LLM (default: when configured).")] = None,
    threshold: Annotated[float, typer.Option(min=0.0, max=1.0, help="Report coverage and accuracy of the answers "
                                             "given with at least this confidence, beside full coverage.")] = 0.5,
) -> None:
    """Answer every question of FILE with the agent and print answer Hit, set F1, exact-set rate, topic accuracy
    and latency at full coverage (withheld answers scored as given), then the coverage and accuracy of the answers
    given with confidence ≥ --threshold (gold of CE-Prompt files: the Cypher executed on the raw disease data;
    skips counted)."""
    from kgrag.agent.evaluation.evaluate import evaluate, read_kg_questions, read_questions
    from kgrag.agent.resources import resources_for

    if not questions.is_file():
        raise KgragError(f"no question file at {questions}")
    if no_brackets and not kg:
        raise KgragError("--no-brackets needs --kg (MetaQA-format questions mark their topic in [brackets])")
    settings = get_settings()
    # the KG opened by the agent's own loader: its name resolved once, here (unknown or unprepared: one line saying
    # so); the agent's steps then find it open, and its graph (None on an endpoint) reads the questions' topics
    triple_kg = resources_for(settings).triple_kg(kg) if kg else None
    try:
        items, skipped = (read_kg_questions(questions, triple_kg.graph, no_brackets) if triple_kg is not None else
                          read_questions(questions, settings.data_dir / "medical" / "diseases"))
    except ValueError as exc:
        raise KgragError(str(exc)) from None
    items = items[:limit] if limit else items
    answer = agent_answerer(kn, llm, kg, style.value)
    with Progress(console=err_console, transient=True) as progress:
        task = progress.add_task("answering", total=len(items))
        report = evaluate(items, answer, lambda i: progress.update(task, completed=i), threshold=threshold)
    figures = report["figures"]
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in report["predictions"]),
                       encoding="utf-8")
    columns = ("n", "hits@1", "hit", "f1", "exact", "topic_acc", "p50_ms", "p95_ms", "intent_planner")
    console.print(figures_table(f"agent on {questions.name} ({f'kg {kg}' if kg else f'kn {kn}'})", columns,
                                (figures[c] for c in columns)))
    console.print(figures_table(
        "by confidence (coverage: share answered at ≥ threshold; accuracy over those)",
        ("threshold", "answered", "coverage", "hit_answered", "f1_answered"),
        *[[row[c] if row[c] is not None else "–" for c in ("threshold", "answered", "coverage", "hit_answered",
                                                          "f1_answered")] for row in figures["selective"]]))
    if skipped:
        console.print("skipped: " + ", ".join(f"{reason} {count}" for reason, count in skipped.most_common()))
    if json_out:
        keys = ("n", "hits@1", "hit", "f1", "p50_ms") if kg else ("n", "hit", "f1", "exact", "topic_acc", "p50_ms",
                                                                 "intent_planner")
        keys += ("threshold", "coverage", "hit_answered", "f1_answered")
        print(json.dumps({k: figures[k] for k in keys}))
