"""The ``kgrag`` command line (typer). Every command has ``--help``; errors print one line, no traceback."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from pydantic import SecretStr, ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from kgrag.agent.render import state_tree
from kgrag.agent.threads import load_history, save_history
from kgrag.config import get_settings
from kgrag.errors import KgragError
from kgrag.hrag.gflownet.config import GFlowNetConfig
from kgrag.hrag.retrieval.config import RetrieverConfig
from kgrag.modes.params import MODES
from kgrag.modes.render import result_summary
from kgrag.network.cli import kn_app
from kgrag.prep.kg_cli import kg_app

# The commands import the rest on use: flows (Prefect, ~1 s), the agent graph, H-RAG's evaluation (torch), the
# API and MCP servers (uvicorn), the LLM client (httpx), the stores, the dataset readers: each 0.04-2.6 s on top of this module
# (measured after `import kgrag.cli`), which `kgrag --help` and every other command would pay otherwise.

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no weight-loading bars in a command's output

app = typer.Typer(
    name="kgrag",
    help="kgrag: turn a knowledge graph into agent-ready context and answers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
data_app = typer.Typer(help="Datasets: where they come from, downloading them.", no_args_is_help=True)
app.add_typer(data_app, name="data")
app.add_typer(kn_app, name="kn")
app.add_typer(kg_app, name="kg")
deploy_app = typer.Typer(help="Scheduled deployments of the offline flows (deployments/prefect.yaml).",
                         no_args_is_help=True)
app.add_typer(deploy_app, name="deploy")
console = Console()
err_console = Console(stderr=True)
F = TypeVar("F", bound=Callable)


def known_dataset(name: str) -> str:
    """``name`` when it is a built-in or registered dataset; else a one-line error naming the known ones."""
    from kgrag.data.registry import dataset_spec

    return dataset_spec(name, get_settings()).name


def friendly_errors(fn: F) -> F:
    """Turn a :class:`KgragError` (and a failed SPARQL/LLM call) into one clear line and exit code 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KgragError as exc:
            # one line however long (the terminal wraps it; rich would break it at 80 columns off a terminal)
            err_console.print(f"[bold red]error:[/] {escape(' '.join(str(exc).split()))}", highlight=False,
                              soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


@app.command()
@friendly_errors
def prepare(
    dataset: Annotated[str, typer.Option(help="Dataset to prepare: built-in (metaqa, demo, medical), registered, or "
                                        "the NAME to import your own graph under.")] = "metaqa",
    triples: Annotated[list[Path] | None, typer.Option(help="Your graph: N-Triples, N-Quads, Turtle (.gz/.bz2 too) "
                                                       "or head<TAB>relation<TAB>tail lines; repeatable.")] = None,
    questions: Annotated[list[Path] | None, typer.Option(help="Its questions: JSONL {question, topic_entities, "
                                                         "answers, split?}, MetaQA lines, WebQSP or CWQ JSON; "
                                                         "repeatable.")] = None,
    lang: Annotated[str, typer.Option(help="Preferred language of the names.")] = "en",
    endpoint: Annotated[str | None, typer.Option(help="Register a graph served by this SPARQL endpoint instead "
                                                 "(not copied).")] = None,
    graph: Annotated[str | None, typer.Option(help="With --endpoint: the named graph holding it.")] = None,
    namespace: Annotated[str | None, typer.Option(help="With --endpoint: the IRI base of its entities and "
                                                  "relations (default Freebase's).")] = None,
    max_bad_lines: Annotated[int, typer.Option(min=0, help="Malformed lines skipped before the import stops.")] = 1000,
    data_dir: Annotated[Path | None, typer.Option(help="Override KGRAG_DATA_DIR.")] = None,
    store: Annotated[bool, typer.Option(help="With --triples: also load the embedded SPARQL store the KG tools "
                                        "query (--no-store: H-RAG only, reading the mapped graph).")] = True,
) -> None:
    """Prepare a dataset (idempotent): CSR graph, Oxigraph store, resolved questions, summary. With --triples,
    import your own graph as dataset NAME (registered once every step succeeded; the same inputs again: a
    no-op); with --endpoint, register a graph that stays on its SPARQL server.

    Outputs go to <KGRAG_WORK_DIR>/<dataset>/ and the summary is printed as a table.
    """
    from flows.prepare_data import prepare_data  # on use, as every flow: importing Prefect costs the CLI ~2 s
    from kgrag.prep.register import import_spec, register_endpoint
    from kgrag.prep.steps import check_inputs
    from kgrag.run import print_markdown_table

    settings = get_settings()
    if endpoint:
        spec = register_endpoint(settings, dataset, endpoint, graph, namespace, lang, questions or [])
        console.print(f"registered {spec.name}: {spec.describe()} (try: kgrag tools --kg {spec.name}, "
                      f"kgrag ask \"…\" --kg {spec.name})", highlight=False)
        return
    spec = import_spec(settings, dataset, triples or [], questions or [], lang, max_bad_lines, store)
    check_inputs(spec, data_dir or settings.data_dir)
    result = prepare_data(dataset=spec.name, data_dir=str(data_dir) if data_dir else None,
                          spec=None if spec.builtin else spec.model_dump(mode="json"))
    print_markdown_table(result["markdown"])
    _print_try_next(spec.name)


def _print_try_next(dataset: str) -> None:
    """After ``prepare``: sample questions of the prepared data as ``kgrag ask`` commands to copy."""
    from kgrag.prep.next_steps import ask_command, try_next

    settings = get_settings()
    commands = try_next(dataset, settings.dataset_dir(dataset))
    lines = []
    if commands:
        lines += [f"questions of the prepared {dataset} data:", *commands]
        if not (settings.checkpoint_dir / "gflownet" / f"{dataset}-latest.json").is_file():
            lines.append("(no trained path reasoner yet: the agent ranks the topic's relation chains zero-shot, one "
                         "hop and two through unnamed CVT nodes; train one with `kgrag train-retriever --dataset "
                         f"{dataset}` then `kgrag retriever-eval` and `kgrag train-gflownet`)")
    elif dataset == "medical":  # its questions are Cypher-paired: they are answered over the knowledge network
        lines += ["the medical questions are answered over its knowledge network:", "kgrag kn load medical",
                  ask_command("上气道梗阻有哪些症状", "kn", "medical")]
    lines.append("kgrag serve   (the console page at http://127.0.0.1:8000/, the HTTP API; OpenAPI at /docs)")
    console.print("\n[bold]Try next[/]")
    for line in lines:
        console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)


@app.command()
@friendly_errors
def run() -> None:
    """The main job (what `make run` runs): prepare MetaQA when the data dir has it (else the demo KG), answer one
    dev question with SPARQL, train the H-RAG retriever and reasoner on a budget, answer the validation split and
    two questions in memory, then the agent over the knowledge network; prints the wall time of each stage."""
    from flows.prepare_data import prepare_data
    from flows.retriever_eval import retriever_eval
    from flows.train_gflownet import train_gflownet
    from flows.train_intent import train_intent
    from flows.train_retriever import train_retriever
    from graphs.agent.run import agent_answerer
    from kgrag.run import Jobs, main

    main(Jobs(prepare_data=prepare_data, train_retriever=train_retriever, retriever_eval=retriever_eval,
              train_gflownet=train_gflownet, train_intent=train_intent, agent_answerer=agent_answerer))


@app.command()
@friendly_errors
def sparql(
    query: Annotated[str, typer.Argument(help="A SPARQL 1.1 SELECT query ('-' reads it from stdin).")],
    dataset: Annotated[str, typer.Option(help="Prepared dataset whose store to query. (kgrag kg list)")] = "metaqa",
    limit: Annotated[int, typer.Option(help="Rows to print at most.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print rows as JSON lines.")] = False,
) -> None:
    """Run a SELECT query on the dataset's store (KGRAG_SPARQL_ENDPOINT when set, else the embedded store)."""
    from kgrag.graph import open_store

    text = sys.stdin.read() if query == "-" else query
    with open_store(known_dataset(dataset)) as store:
        rows = store.select(text)
    for row in rows[:limit]:
        if as_json:
            console.print_json(json.dumps({k: v.value for k, v in row.items()}, ensure_ascii=False))
        else:
            console.print("\t".join(f"{k}={v.value}" for k, v in row.items()), highlight=False, markup=False)
    console.print(f"{len(rows)} row(s)", style="dim")


@app.command()
@friendly_errors
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Server processes (each opens its own stores).")] = 1,
    warm: Annotated[bool, typer.Option("--warm/--no-warm", help="Warm every network's search path in the "
                                       "background at start (models, vector indexes, rerank documents).")] = True,
) -> None:
    """Serve the console page (/) and every HTTP route of the project (FastAPI + uvicorn); GET /healthz answers
    200 once stores are open (and says ``"warming": true`` until the search path is warm)."""
    os.environ["KGRAG_WARM_ON_START"] = "1" if warm else "0"  # the workers build their settings from it
    get_settings.cache_clear()
    # one torch/BLAS thread per server process unless told otherwise: the query embedder's calls are short
    # and come between SQL and Python work of other requests, so extra intra-op threads only spin against them
    # (medical kn_search in-process, 2 cores: 147 ms/request with 2 threads, 102 ms with 1; with every worker
    # using all cores, concurrent encodes oversubscribe the machine and each takes ~10x longer)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if workers > 1:  # one process and one SO_REUSEPORT socket per worker, each building the app from the factory
        from kgrag.api.workers import serve_workers

        serve_workers(host, port, workers)
        return
    import uvicorn

    from kgrag.api.app import create_app

    uvicorn.run(create_app(), host=host, port=port, log_level="info")


class McpTransport(StrEnum):
    stdio = "stdio"
    http = "http"


@app.command("mcp")
@friendly_errors
def mcp_cmd(
    transport: Annotated[McpTransport, typer.Option(help="stdio (spawned by an MCP client) or streamable HTTP.")]
    = McpTransport.stdio,
    host: Annotated[str, typer.Option(help="With --transport http: interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="With --transport http: port (the endpoint is /mcp).")] = 8765,
    tool_timeout: Annotated[float, typer.Option(min=0.001, help="Seconds a tool call may take.")] = 120.0,
    max_result_chars: Annotated[int, typer.Option(min=1000, help="Longer tool results are cut.")] = 200_000,
    warm: Annotated[bool, typer.Option("--warm/--no-warm", help="Load the query embedder at start, in the "
                                       "background (else the first search loads it).")] = True,
) -> None:
    """Serve the agent-facing tools over MCP: kn_search, context_search, query_object_instance,
    query_instance_subgraph, query_modes, get_relations / get_triples (one KG session per MCP
    session) and ask (the agent)."""
    from kgrag.mcp import server as mcp_server

    config = mcp_server.McpConfig(transport=transport.value, tool_timeout=tool_timeout,
                                  max_result_chars=max_result_chars, warm=warm)
    mcp_server.serve(config, host=host, port=port)


@app.command()
@friendly_errors
def tools(
    kg: Annotated[str, typer.Option(help="Prepared KG to query (demo, metaqa, medical). (kgrag kg list)")] = "metaqa",
    question: Annotated[str, typer.Option(help="The question (used to rank relations).")] = "",
    topic: Annotated[list[str] | None, typer.Option(help="Topic entity name or id; repeatable.")] = None,
    trace: Annotated[Path | None, typer.Option(help="Write the session trace here as JSON.")] = None,
) -> None:
    """Run KG tool queries from stdin in ONE session, printing each result as the model sees it.

    One query per line: get_relations("…") or get_triples("…", ["rel", …]), bare or inside <kg-query>…</kg-query>.
    Results are separated by a line `---`. Uses KGRAG_SPARQL_ENDPOINT when set, else the embedded store.
    """
    from kgrag.tools.factory import open_session

    session = open_session(known_dataset(kg), question=question, topics=topic or [])
    first = True
    for line in sys.stdin:
        if not line.strip():
            continue
        if not first:
            typer.echo("---")
        typer.echo(session.run(line.rstrip("\n")))
        first = False
    if trace is not None:
        trace.write_text(json.dumps(session.trace, ensure_ascii=False, indent=2), encoding="utf-8")


@app.command("train-retriever")
@friendly_errors
def train_retriever_cmd(
    dataset: Annotated[str, typer.Option(help="Prepared dataset to train on. (kgrag kg list)")] = "metaqa",
    epochs: Annotated[int | None, typer.Option(help="Most epochs (early stopping may end sooner).")] = None,
    max_train_questions: Annotated[int | None, typer.Option(help="Train on this many train questions (0 = all).")] = None,
    config: Annotated[str | None, typer.Option(help="JSON object of RetrieverConfig fields.")] = None,
) -> None:
    """Train the H-RAG dense triple retriever (flow `train-retriever`): PPR G_retrieval, labels, BCE training with
    early stopping on validation recall@K. Checkpoints under <KGRAG_WORK_DIR>/checkpoints/retriever/."""
    from flows.train_retriever import train_retriever

    overrides = _config_overrides(config, epochs=epochs, max_train_questions=max_train_questions)
    result = train_retriever(dataset=known_dataset(dataset), config=overrides)
    for row in result["history"]:
        console.print(f"epoch {row['epoch']}: loss {row['loss']:.4f}, {row['train_seconds']:.1f}s, "
                      + ", ".join(f"{k} {v:.4f}" for k, v in row.items() if k.startswith("val_") and isinstance(v, float)))
    console.print(f"best epoch {result['best_epoch']}, checkpoint {result['checkpoint']}")


def _config_overrides(config: str | None, model: type | None = None, **fields: int | str | None) -> dict:
    """``--config`` JSON plus the explicit options, validated by ``model`` (default: RetrieverConfig)."""
    model = model or RetrieverConfig
    try:
        overrides = json.loads(config) if config else {}
    except json.JSONDecodeError as exc:
        raise KgragError(f"--config is not valid JSON: {exc}") from None
    if not isinstance(overrides, dict):
        raise KgragError(f"--config must be a JSON object of {model.__name__} fields")
    overrides.update({k: v for k, v in fields.items() if v is not None})
    try:
        return model(**overrides).model_dump()
    except ValidationError as exc:
        raise KgragError(f"invalid {model.__name__}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None


def _require_question_file(questions: Path | None) -> None:
    """A missing ``--questions`` file is named before any checkpoint is looked for."""
    if questions is not None and not questions.is_file():
        raise KgragError(f"question file not found: {questions} (MetaQA lines, JSONL, WebQSP or CWQ JSON)")


class IntentSource(StrEnum):
    self_supervised = "self"
    labelled = "labelled"


@app.command("train-intent")
@friendly_errors
def train_intent_cmd(
    kn: Annotated[str, typer.Option(help="The stored knowledge network (kgrag kn list).")] = "medical",
    source: Annotated[IntentSource, typer.Option(help="self: questions synthesised from the network (no labels); "
                                                 "labelled: CE-Prompt questions with Cypher (the medical network).")
                      ] = IntentSource.self_supervised,
    questions: Annotated[Path | None, typer.Option(help="With --source labelled: the CE-Prompt JSON file (default: "
                                                   "<data_dir>/medical/questions_cypher_train.json).")] = None,
    per_candidate: Annotated[int, typer.Option(min=1, max=500, help="With --source self: questions per schema "
                                               "element.")] = 48,
    config: Annotated[str | None, typer.Option(help="JSON object of IntentConfig fields.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Retrain even when the same inputs finished.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the run's figures as JSON on the last line.")] = False,
) -> None:
    """Train the agent's question → schema-element ranker (flow `train-intent`): from the network itself
    (`--source self`, any network, no labelled question) or from labelled questions (`--source labelled`). The
    agent picks it up with KGRAG_AGENT_INTENT=auto|self|labelled."""
    from flows.train_intent import train_intent
    from kgrag.agent.kn.intent import IntentConfig

    if questions is not None and source != IntentSource.labelled:
        raise KgragError("--questions needs --source labelled (self-supervised training reads no question file)")
    if questions is not None and not questions.is_file():
        raise KgragError(f"question file not found: {questions}")
    overrides = _config_overrides(config, IntentConfig)
    if source == IntentSource.self_supervised:
        from kgrag.errors import NetworkNotFound
        from kgrag.network.store import NetworkStore

        store = NetworkStore(get_settings().db_url)
        try:
            store.get_network(kn)
        except NetworkNotFound:
            raise KgragError(f"no knowledge network {kn!r} is loaded (see `kgrag kn list`; load one with "
                             "`kgrag kn load NAME|PATH.yaml`)") from None
        finally:
            store.close()
    result = train_intent(config=overrides, force=force, source=source.value, kn_id=kn,
                          questions=str(questions) if questions else None, per_candidate=per_candidate)
    if source == IntentSource.self_supervised:
        table = Table(title=f"self-supervised intent ranker: {kn}", header_style="bold")
        for col in ("candidates", "questions", "labels", "n-grams", "train s", "total s"):
            table.add_column(col, justify="right")
        table.add_row(*map(str, (result["candidates"], result["questions"], result["labels"], result["n_features"],
                                 f"{result['train_seconds']:.2f}", f"{result['seconds']:.1f}")))
        console.print(table)
        for example in result["examples"][:5]:
            console.print(f"  {escape(example['question'])}  →  {escape(example['label'])}", highlight=False)
        figures = {k: result[k] for k in ("kn_id", "source", "candidates", "questions", "labels", "seconds")}
    else:
        v = result["validation"]
        console.print(f"labelled intent ranker: validation accuracy@1 {v['accuracy@1']:.4f} (n={v['n']}), "
                      f"run {result['run_dir']}")
        figures = {"kn_id": kn, "source": "labelled", "accuracy@1": v["accuracy@1"], "n": v["n"]}
    console.print(f"run dir {result['run_dir']}" + (" (cached)" if result.get("cached") else ""))
    if json_out:
        print(json.dumps(figures))


@app.command("retriever-eval")
@friendly_errors
def retriever_eval_cmd(
    questions: Annotated[Path | None, typer.Option(help="Question file: MetaQA lines (question<TAB>a1|a2), JSONL {question, topic_entities, answers}, WebQSP or CWQ JSON.")] = None,
    hop: Annotated[int | None, typer.Option(help="Hop count of the file's questions (default: from its path).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object with the figures on the last line.")] = False,
    dataset: Annotated[str, typer.Option(help="Prepared dataset (graph + trained retriever). (kgrag kg list)")] = "metaqa",
    split: Annotated[str | None, typer.Option(help="Without --questions: one split (default: all splits).")] = None,
    checkpoint: Annotated[Path | None, typer.Option(help="Retriever checkpoint (default: the latest trained).")] = None,
) -> None:
    """Evaluate the trained retriever: answer recall@K and shortest-path triple recall@K (K = 50, 100, 200, 500) per
    hop. With --questions, on that file; else on the prepared splits, also writing <split>_g_agent.pt."""
    from kgrag.hrag.retrieval.metrics import flat_metrics, report_table

    if hop is not None and hop < 0:
        raise KgragError("--hop must be >= 0")
    _require_question_file(questions)
    settings = get_settings()
    if questions is not None:
        from kgrag.hrag.retrieval.evaluate import evaluate_question_file

        evaluation, info = evaluate_question_file(settings, known_dataset(dataset), questions, hop, checkpoint)
        if not json_out:
            console.print(f"{info['questions']} questions from {questions} ({info['malformed_lines']} malformed lines, "
                          f"{info['unresolved_topic']} with an unknown topic entity left out)")
        print(report_table(evaluation.report))
        if json_out:
            print(json.dumps(flat_metrics(evaluation.report)))
        return
    from flows.retriever_eval import retriever_eval
    from kgrag.ops.task_runner import on_task_runner

    result = on_task_runner(retriever_eval)(dataset=known_dataset(dataset), run_all_splits=split is None, split=split or "test",
                            checkpoint=str(checkpoint) if checkpoint else None)
    for name, part in result.items():
        console.print(f"[bold]{name}[/] (g_agent: {part['g_agent']})")
        print(report_table(part["report"]))
    if json_out:
        print(json.dumps({name: flat_metrics(part["report"]) for name, part in result.items()}))


@app.command("train-gflownet")
@friendly_errors
def train_gflownet_cmd(
    dataset: Annotated[str, typer.Option(help="Prepared dataset with g_agent files (run retriever-eval). (kgrag kg list)")] = "metaqa",
    steps: Annotated[int | None, typer.Option(help="Optimiser steps (one batch of trajectories each).")] = None,
    objective: Annotated[str | None, typer.Option(help="tb (trajectory balance) or subtb.")] = None,
    device: Annotated[str | None, typer.Option(help="torch device: auto (the default: the GPU when present), cpu, "
                                               "cuda, mps.")] = None,
    config: Annotated[str | None, typer.Option(help="JSON object of GFlowNetConfig fields.")] = None,
    train_g_agent: Annotated[Path | None, typer.Option(help="data.cache_paths.train (default: the work dir's).")] = None,
    validation_g_agent: Annotated[Path | None, typer.Option(help="data.cache_paths.validation.")] = None,
) -> None:
    """Train the H-RAG GFlowNet path reasoner on <split>_g_agent.pt (flow `train-gflownet`); checkpoints under
    <KGRAG_WORK_DIR>/checkpoints/gflownet/, resumed after a kill; prints the validation answers table."""
    from flows.train_gflownet import train_gflownet
    from kgrag.hrag.gflownet.evaluate import metrics_table

    overrides = _config_overrides(config, GFlowNetConfig, steps=steps, objective=objective, device=device)
    paths = {k: str(v) for k, v in (("train", train_g_agent), ("validation", validation_g_agent)) if v}
    result = train_gflownet(dataset=known_dataset(dataset), config=overrides, cache_paths=paths)
    for row in result["history"]:
        console.print(f"step {row['step']}: loss {row['loss']:.3f}, correct {row['correct']:.3f}, "
                      f"val hits@1 {row['val_hits@1']:.4f}, {row['train_seconds']:.0f}s")
    console.print(f"best step {result['best_step']}, checkpoint {result['checkpoint']}, "
                  f"threshold {result['validation']['threshold']}")
    print(metrics_table(result["validation"]["report"]))


@app.command("eval")
@friendly_errors
def eval_cmd(
    questions: Annotated[Path | None, typer.Option(help="Question file: MetaQA lines (question<TAB>a1|a2), JSONL {question, topic_entities, answers}, WebQSP or CWQ JSON.")] = None,
    hop: Annotated[int | None, typer.Option(help="Hop count of the file's questions (default: from its path).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print {n, hits@1, hit, f1} as JSON on the last line.")] = False,
    dataset: Annotated[str, typer.Option(help="Prepared dataset (graph + trained retriever and policy). (kgrag kg list)")] = "metaqa",
    split: Annotated[str, typer.Option(help="Without --questions: the g_agent split to answer.")] = "validation",
    no_brackets: Annotated[bool, typer.Option("--no-brackets", help="With --questions: strip the [topic] marks and "
                                              "link the topic entities from the text.")] = False,
) -> None:
    """Answer questions with the latest retriever + GFlowNet policy and print Hits@1 / Hit / F1 per hop. With
    --questions the whole chain runs on the file (PPR → retriever + chain prior → g_agent → policy → answers)."""
    from flows.evaluate import evaluate
    from kgrag.hrag.gflownet.evaluate import metrics_table
    from kgrag.ops.task_runner import on_task_runner

    if hop is not None and hop < 0:
        raise KgragError("--hop must be >= 0")
    _require_question_file(questions)
    if no_brackets and questions is None:
        raise KgragError("--no-brackets needs --questions (a g_agent split has its topics already)")
    result = on_task_runner(evaluate)(dataset=known_dataset(dataset), split=split, questions=str(questions) if questions else None, hop=hop,
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


def _agent_answerer(kn: str, llm: bool | None, kg: str | None = None, style: str | None = None):
    """:func:`graphs.agent.run.agent_answerer` (imported on use: the agent graph is heavy to import)."""
    from graphs.agent.run import agent_answerer

    return agent_answerer(kn, llm, kg, style)


class LLMStyle(StrEnum):
    kg_query = "kg-query"
    tools = "tools"


@app.command()
@friendly_errors
def ask(
    question: Annotated[str, typer.Argument(help="The question, in the network's language.")],
    kn: Annotated[str, typer.Option(help="Knowledge network id (kgrag kn list).")] = "medical",
    kg: Annotated[str | None, typer.Option(help="A triple graph behind SPARQL instead (metaqa, demo, freebase).")] = None,
    thread: Annotated[str | None, typer.Option(help="Conversation thread id: a follow-up resolves to its topic.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the final state as JSON.")] = False,
    llm: Annotated[bool | None, typer.Option("--llm/--no-llm", help="Plan with the LLM (default: when "
                                             "KGRAG_LLM_BASE_URL is set).")] = None,
    style: Annotated[LLMStyle, typer.Option(help="With --kg and an LLM: <kg-query> text or tool calls.")] = LLMStyle.kg_query,
) -> None:
    """Answer one question with the agent (keywords → schema recall → contextual recall → tool calls → answer)
    and print each step as a tree. Exits with 1 when it could not answer (no answer values), saying why."""
    from graphs.agent.context import AgentContext, resolve
    from kgrag.agent.node import question_problem

    settings = get_settings()
    # refused here, in one line, before anything echoes it back (an over-long question would fill the screen)
    try:
        agent_settings = resolve(AgentContext(kn_id=kn, kg=kg), settings)
    except ValidationError as exc:  # an empty or over-long --kn / --kg
        error = exc.errors()[0]
        raise KgragError(f"invalid --{'kn' if error['loc'][0] == 'kn_id' else error['loc'][0]}: {error['msg']}") from None
    problem = question_problem(question, agent_settings)
    if problem:
        raise KgragError(problem)
    try:
        history = load_history(settings, thread) if thread else []
    except ValueError as exc:
        raise KgragError(str(exc)) from None
    state = _agent_answerer(kn, llm, kg, style.value)(question, history)
    if thread:
        save_history(settings, thread, state.get("history", []))
    if json_out:
        print(json.dumps(state, ensure_ascii=False))
    else:
        console.print(state_tree(state))
    why = _no_answer(state)
    if why:
        raise KgragError(f"no answer: {why}")


def _no_answer(state: dict) -> str | None:
    """Why the agent's final state holds no answer (its errors, else its "I could not …" sentence), or None: it
    answered with values, or the LLM answered in its own words without an error."""
    if state.get("answers"):
        return None
    if state.get("planner") == "llm" and state.get("answer") and not state.get("errors"):
        return None
    return "; ".join(state.get("errors") or []) or state.get("answer") or "the agent gave no answer"


#: the query modes as a choice for typer (one source: kgrag.modes.params.MODES)
QueryModeName = StrEnum("QueryModeName", {mode: mode for mode in MODES})


@app.command("query")
@friendly_errors
def query_cmd(
    question: Annotated[str, typer.Argument(help="The question, in the network's language.")],
    kn: Annotated[str, typer.Option(help="Knowledge network id (kgrag kn list).")] = "medical",
    mode: Annotated[QueryModeName, typer.Option(help="Query mode (spec query-modes.md).")] = QueryModeName.mix,
    top_k: Annotated[int, typer.Option(help="Entities retrieved.")] = 40,
    chunk_top_k: Annotated[int, typer.Option(help="Chunks kept per chunk route.")] = 20,
    max_total_tokens: Annotated[int, typer.Option(help="Whole prompt budget.")] = 30000,
    only_need_context: Annotated[bool, typer.Option("--only-need-context", help="Return the context only.")] = False,
    only_need_prompt: Annotated[bool, typer.Option("--only-need-prompt", help="Return the prompt only.")] = False,
    hl: Annotated[list[str] | None, typer.Option("--hl", help="Preset high-level keyword (repeatable).")] = None,
    ll: Annotated[list[str] | None, typer.Option("--ll", help="Preset low-level keyword (repeatable).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print {response, context, raw_data} as JSON.")] = False,
) -> None:
    """Retrieve (and answer) in one query mode: local / global / hybrid / naive / mix / bypass."""
    from kgrag.llm.client import ChatClient
    from kgrag.modes.params import QueryParam
    from kgrag.modes.query import kg_query
    from kgrag.network.store import NetworkStore

    settings = get_settings()
    try:
        param = QueryParam(mode=mode.value, top_k=top_k, chunk_top_k=chunk_top_k, max_total_tokens=max_total_tokens,
                           only_need_context=only_need_context, only_need_prompt=only_need_prompt,
                           hl_keywords=hl or [], ll_keywords=ll or [])
    except ValidationError as exc:
        raise KgragError(f"invalid query parameters: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from None
    store = NetworkStore(settings.db_url)
    llm = ChatClient.from_settings(settings) if settings.llm_enabled and not (only_need_context or only_need_prompt) else None
    try:
        result = kg_query(question, store, kn, param, llm)
    except LookupError:
        raise KgragError(f"knowledge network {kn!r} not found (kgrag kn list; kgrag kn load {kn})") from None
    except ValueError as exc:
        raise KgragError(str(exc)) from None
    finally:
        store.close()
        if llm is not None:
            llm.close()
    if json_out:
        print(json.dumps(result.model_dump(mode="json"), ensure_ascii=False))
        return
    console.print(result_summary(question, result))


@app.command("agent-eval")
@friendly_errors
def agent_eval_cmd(
    questions: Annotated[Path, typer.Option(help="CE-Prompt JSON ([{input, cypher}]) or JSONL of {question, answers}; "
                                            "with --kg: JSONL {question, topic_entities, answers}, MetaQA lines "
                                            "(question<TAB>a1|a2), WebQSP or CWQ JSON.")],
    kn: Annotated[str, typer.Option(help="Knowledge network id.")] = "medical",
    kg: Annotated[str | None, typer.Option(help="A triple graph behind SPARQL instead (metaqa, demo, freebase).")] = None,
    no_brackets: Annotated[bool, typer.Option("--no-brackets", help="With --kg: strip the [topic] marks; the agent "
                                              "links the topic from the text.")] = False,
    style: Annotated[LLMStyle, typer.Option(help="With --kg and an LLM: <kg-query> text or tool calls.")] = LLMStyle.kg_query,
    out: Annotated[Path | None, typer.Option(help="Write one prediction per line (JSONL) here.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print {n, hit, f1, exact, topic_acc, p50_ms} as JSON "
                                           "on the last line.")] = False,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N questions.")] = None,
    llm: Annotated[bool | None, typer.Option("--llm/--no-llm", help="Plan with the LLM (default: when configured).")] = None,
) -> None:
    """Answer every question of FILE with the agent and print answer Hit, set F1, exact-set rate, topic accuracy
    and latency (gold of CE-Prompt files: the Cypher executed on the raw disease data; skips counted)."""
    from kgrag.agent.training.evaluate import evaluate, read_kg_questions, read_questions
    from kgrag.graph.csr import CSRGraph

    if not questions.is_file():
        raise KgragError(f"no question file at {questions}")
    if no_brackets and not kg:
        raise KgragError("--no-brackets needs --kg (MetaQA-format questions mark their topic in [brackets])")
    settings = get_settings()
    graph_file = settings.dataset_dir(known_dataset(kg)) / "graph.npz" if kg else None
    try:
        items, skipped = (read_kg_questions(questions, CSRGraph.load(graph_file) if graph_file and graph_file.is_file()
                                            else None, no_brackets) if kg else
                          read_questions(questions, settings.data_dir / "medical" / "diseases"))
    except ValueError as exc:
        raise KgragError(str(exc)) from None
    items = items[:limit] if limit else items
    answer = _agent_answerer(kn, llm, kg, style.value)
    with Progress(console=err_console, transient=True) as progress:
        task = progress.add_task("answering", total=len(items))
        report = evaluate(items, answer, lambda i: progress.update(task, completed=i))
    figures = report["figures"]
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in report["predictions"]),
                       encoding="utf-8")
    table = Table(title=f"agent on {questions.name} ({f'kg {kg}' if kg else f'kn {kn}'})", header_style="bold")
    columns = ("n", "hits@1", "hit", "f1", "exact", "topic_acc", "p50_ms", "p95_ms", "intent_planner")
    for col in columns:
        table.add_column(col, justify="right")
    table.add_row(*(str(figures[c]) for c in columns))
    console.print(table)
    if skipped:
        console.print("skipped: " + ", ".join(f"{reason} {count}" for reason, count in skipped.most_common()))
    if json_out:
        keys = ("n", "hits@1", "hit", "f1", "p50_ms") if kg else ("n", "hit", "f1", "exact", "topic_acc", "p50_ms",
                                                                 "intent_planner")
        print(json.dumps({k: figures[k] for k in keys}))


@app.command("config")
def show_config() -> None:
    """Print the effective settings (KGRAG_* environment, .env, defaults); every API key is masked."""
    settings = get_settings()
    for key, value in settings.model_dump().items():
        if key.endswith("api_key"):  # llm_api_key, rerank_api_key, api_key (a SecretStr)
            secret = value.get_secret_value() if isinstance(value, SecretStr) else value
            value = "***" if secret else ""
        console.print(f"KGRAG_{key.upper()}={value}", highlight=False, markup=False, soft_wrap=True)


@data_app.command("list")
def data_list() -> None:
    """List the datasets kgrag knows, their public source and whether they are in the data dir."""
    from kgrag.data.download import DATASETS

    settings = get_settings()
    table = Table("name", "present", "source")
    for name, info in DATASETS.items():
        present = (settings.data_dir / info.subdir).exists()
        table.add_row(name, "yes" if present else "no", info.source)
    console.print(table)


@data_app.command("download")
@friendly_errors
def data_download(
    name: Annotated[str, typer.Argument(help="Dataset name (see `kgrag data list`).")],
    dest: Annotated[Path | None, typer.Option(help="Target data dir (default KGRAG_DATA_DIR).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request.")] = 30.0,
) -> None:
    """Download a dataset from its public source into the data dir (needs network access)."""
    from kgrag.data.download import download

    path = download(name, dest or get_settings().data_dir, timeout=timeout)
    console.print(f"downloaded {name} to {path}")


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


if __name__ == "__main__":  # last: every command above is registered by now (python -m kgrag.cli deploy list)
    app()
