"""The main job behind ``make run``, stage by stage: prepare the data it finds, answer with SPARQL, train and evaluate
H-RAG on a budget, then the agent over the triple graph, the knowledge network and a network without labelled
questions, and the query modes; each stage prints what it shows and its wall time (its parts, which print nothing,
are in :mod:`kgrag.main_job.parts`).

The flows and the agent graph it runs come in a :class:`Jobs` from the entry point (``kgrag run`` in
:mod:`kgrag.cli.run`): nothing below the entry points imports ``flows/`` or ``graphs/``.

    kgrag run        # what `make run` does: kgrag.cli.run builds the Jobs and calls main(jobs)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kgrag.config import get_settings
from kgrag.hrag.gflownet.evaluate import metrics_table
from kgrag.hrag.online.file_eval import strip_brackets
from kgrag.hrag.retrieval.metrics import report_table
from kgrag.hrag.retrieval.pipeline import retriever_splits
from kgrag.main_job.parts import (
    RUN_RETRIEVER_CONFIG,
    NetworkLoad,
    StageClock,
    agent_network,
    agent_questions,
    answer_examples,
    default_dataset,
    example_questions,
    g_agent_example,
    gflownet_budget,
    sparql_example,
)
from kgrag.modes.params import QueryParam
from kgrag.modes.query import kg_query
from kgrag.modes.render import result_summary
from kgrag.network.loaders.registry import ensure_network
from kgrag.network.store import NetworkStore
from kgrag.terminal.tables import markdown_table
from kgrag.terminal.turn_tree import state_tree

console = Console()


@dataclass(frozen=True)
class Jobs:
    """The Prefect flows and the agent runner the stages call (``flows.*``, ``graphs.agent.run.agent_answerer``)."""

    prepare_data: Callable[..., dict]
    train_retriever: Callable[..., dict]
    retriever_eval: Callable[..., dict]
    train_gflownet: Callable[..., dict]
    train_intent: Callable[..., dict]
    agent_answerer: Callable[..., Callable[..., dict]]


def main(jobs: Jobs) -> None:
    """Run every stage in order, printing each as it ends."""
    settings = get_settings()
    clock = StageClock()
    network = NetworkLoad(settings)  # the agent stage's network loads in the background meanwhile
    try:
        _run_stages(jobs, settings, clock, network)
    finally:
        network.close()


def _run_stages(jobs: Jobs, settings, clock, network) -> None:
    """make run's stages in order (see :func:`main`), each closed on ``clock``."""
    dataset = default_dataset(settings)
    console.print(f"[bold]kgrag run[/]: dataset [cyan]{dataset}[/] (data dir {settings.data_dir}, work dir {settings.work_dir})")
    result = jobs.prepare_data(dataset=dataset)
    console.print(markdown_table(result["markdown"]))
    example = sparql_example(dataset, settings)
    if example is None:
        console.print("no 1-hop question with a linking relation to show")
        return
    console.print(f"\n[bold]Question[/] ({'validation' if dataset == 'metaqa' else 'demo'}): {example.question}")
    console.print(f"[bold]SPARQL[/]: {example.query}", highlight=False)
    console.print(f"[bold]Store answers[/] ({len(example.answers)}): {', '.join(example.answers)}")
    console.print(f"[bold]Gold answers[/] ({len(example.gold)}): {', '.join(example.gold)}")
    console.print(f"[bold]Match[/]: {'yes' if example.matches else 'no'}")
    clock.lap("prepare + SPARQL example")
    train_split, validation_split = retriever_splits(dataset)
    _run_retriever(jobs, dataset, settings, train_split, validation_split)
    clock.lap("H-RAG retriever: train + recall + g_agent")
    _run_gflownet(jobs, dataset, settings, train_split, validation_split)
    clock.lap("H-RAG reasoner: train + answer the validation split")
    _run_online(jobs, dataset, settings, validation_split)
    clock.lap("H-RAG online: two questions in memory + the agent on them")
    kn_id, questions = _run_agent(jobs, settings, network)
    clock.lap("agent over the knowledge network")
    _run_unlabelled(jobs, settings)
    clock.lap("agent over a network without labelled questions")
    _run_modes(settings, kn_id, questions[:1])
    clock.lap("query modes")
    table = Table(title=f"make run: {clock.total:.0f} s wall")
    table.add_column("stage")
    table.add_column("seconds", justify="right")
    for name, seconds in clock.stages:
        table.add_row(name, f"{seconds:.1f}")
    console.print(table)


def _run_retriever(jobs: Jobs, dataset: str, settings, train_split: str, validation_split: str) -> None:
    """make run's H-RAG retrieval stage: train the retriever on a small budget, evaluate it, write g_agent."""

    console.print(f"\n[bold]H-RAG retriever[/]: training on {train_split} (budget {RUN_RETRIEVER_CONFIG}), "
                  f"early stop on {validation_split}")
    trained = jobs.train_retriever(dataset=dataset, config=RUN_RETRIEVER_CONFIG, train_split=train_split,
                              validation_split=validation_split)
    for row in trained["history"]:
        console.print(f"  epoch {row['epoch']}: loss {row['loss']:.4f}, {row['train_seconds']:.1f}s")
    result = jobs.retriever_eval(dataset=dataset, run_all_splits=dataset != "demo", split=validation_split)
    part = result[validation_split]
    console.print(f"\n[bold]Retriever recall@K[/] ({dataset} {validation_split}; the scorer alone: answer = an answer "
                  f"entity in the top-K triples, path = share of shortest-path triples in the top-K, ceiling in "
                  f"brackets; g_agent adds the relation-chain prior)")
    print(report_table(part["report"]))
    console.print(f"g_agent files: {', '.join(p['g_agent'] for p in result.values())}")
    for line in g_agent_example(settings, dataset, validation_split):
        console.print(escape(line), highlight=False)


def _run_gflownet(jobs: Jobs, dataset: str, settings, train_split: str, validation_split: str) -> None:
    """make run's System 2 stage: train the GFlowNet path policy on g_agent, answer the validation split."""

    budget = gflownet_budget(dataset)
    console.print(f"\n[bold]H-RAG GFlowNet reasoner[/]: training on {train_split} g_agent "
                  f"(budget {budget}), validating on {validation_split}")
    result = jobs.train_gflownet(dataset=dataset, config=budget, train_split=train_split,
                            validation_split=validation_split)
    for row in result["history"]:
        console.print(f"  step {row['step']}: loss {row['loss']:.3f}, sampled paths correct {row['correct']:.3f}, "
                      f"val hits@1 {row['val_hits@1']:.4f}, {row['train_seconds']:.0f}s")
    validation = result["validation"]
    console.print(f"\n[bold]Answers without an LLM[/] ({dataset} {validation_split}, the budget's questions; g_agent Top-K, "
                  f"the planner's chain search + chain completion; F1 threshold {validation['threshold']} chosen on "
                  f"this split; percent)")
    print(metrics_table(validation["report"]))


def _run_online(jobs: Jobs, dataset: str, settings, validation_split: str) -> None:
    """make run's online stage: two validation questions, brackets removed, answered in memory with their paths;
    then the agent graph on the triple graph answers the last of them, each step shown."""

    console.print("\n[bold]H-RAG online[/]: answer_question on two validation questions typed without [brackets]")
    for line in answer_examples(settings, dataset, validation_split):
        console.print(escape(line), highlight=False)  # paths read "A -[directed_by]-> B": not rich markup
    question = strip_brackets(example_questions(settings, dataset, validation_split)[-1].text)
    console.print(f"\n[bold]The agent on the triple graph[/] ({dataset}, LLM-free): link → chain prior → "
                  "reason_paths → verify_path on the store → answer")
    console.print(state_tree(jobs.agent_answerer(settings.agent_kn_id, None, kg=dataset)(question)))


def _run_agent(jobs: Jobs, settings, network=None) -> tuple[str, list[str]]:
    """make run's agent stage: the knowledge network (medical when its data is there, else demo), the trained
    intent ranker (medical), then two questions answered by the LangGraph agent, each step shown."""

    kn_id = agent_network(settings)
    console.print(f"\n[bold]Agent[/]: knowledge network [cyan]{kn_id}[/] in {settings.db_url}")
    background = network.wait() if network is not None else None  # before opening the store it writes
    store = NetworkStore(settings.db_url)
    try:
        if network is not None and network.started and background is None:
            console.print(f"  the background load of {kn_id} did not finish (its error is above): loading it now")
        if background is not None:
            console.print(f"  loaded {kn_id} in the background while the H-RAG stages ran: "
                          f"{store.count_instances(kn_id)} instances, {store.count_links(kn_id)} links "
                          f"({background:.0f} s, the domain vectors' training included)")
        start = time.perf_counter()
        if ensure_network(store, kn_id, settings.data_dir):
            console.print(f"  loaded {kn_id}: {store.count_instances(kn_id)} instances, {store.count_links(kn_id)} "
                          f"links ({time.perf_counter() - start:.0f} s, the domain vectors' training included)")
        if kn_id == "medical":
            start = time.perf_counter()
            result = jobs.train_intent()
            v = result["validation"]
            console.print(f"  intent ranker ({'reused' if result.get('cached') else 'trained'}): validation "
                          f"accuracy@1 {v['accuracy@1']:.4f} (n={v['n']}), baseline "
                          f"{result['baseline']['accuracy@1']:.4f}, majority {result['majority_accuracy']:.4f} "
                          f"({time.perf_counter() - start:.0f} s)")
        questions = agent_questions(store, kn_id)
    finally:
        store.close()
    answer = jobs.agent_answerer(kn_id, None)
    for question in questions:
        console.print(state_tree(answer(question)))
    link = f"http://127.0.0.1:8000/?kn={quote(kn_id)}" + (f"&q={quote(questions[0])}" if questions else "")
    console.print("Serve it: [bold]langgraph dev --no-browser[/] (assistant 'agent'); ask in-process: "
                  "[bold]kgrag ask \"问题\" --kn " + kn_id + "[/]; watch it in a browser: [bold]kgrag serve[/] → "
                  + link, highlight=False)
    return kn_id, questions


#: the example network make run asks without labelled questions, and what it asks
UNLABELLED_KN = "library"
UNLABELLED_QUESTIONS = ("When was Margaret Atwood born?", "Which books are dystopian fiction?")


def _run_unlabelled(jobs: Jobs, settings) -> None:
    """make run's label-free stage: the library example (kgrag/network/examples/library, no labelled question)
    loaded, its self-supervised intent ranker trained on questions synthesised from it, two questions answered."""
    from importlib.resources import files

    from kgrag.network.loaders.registry import load_named

    schema = Path(str(files("kgrag.network.examples") / UNLABELLED_KN / f"{UNLABELLED_KN}.yaml"))
    console.print(f"\n[bold]Agent without labelled questions[/]: the example network [cyan]{UNLABELLED_KN}[/] "
                  f"({schema.parent})")
    store = NetworkStore(settings.db_url)
    try:
        stats = load_named(str(schema), store)
    finally:
        store.close()
    result = jobs.train_intent(source="self", kn_id=UNLABELLED_KN)
    console.print(f"  loaded {stats.instances} instances, {stats.links} links ({stats.seconds:.1f} s); "
                  f"self-supervised intent ranker: {result['questions']} questions synthesised from the network "
                  f"for {result['labels']} schema elements, trained in {result['train_seconds']:.2f} s")
    answer = jobs.agent_answerer(UNLABELLED_KN, None)
    for question in UNLABELLED_QUESTIONS:
        console.print(state_tree(answer(question)))


def _run_modes(settings, kn_id: str, questions: list[str]) -> None:
    """make run's query-modes stage: the first agent question in hybrid mode (context only: no LLM needed)."""

    store = NetworkStore(settings.db_url)
    try:
        for question in questions:
            result = kg_query(question, store, kn_id, QueryParam(mode="hybrid", only_need_context=True))
            console.print(result_summary(question, result))
    finally:
        store.close()
    console.print("Other modes: [bold]kgrag query \"问题\" --kn " + kn_id + " --mode local|global|hybrid|naive|mix[/]")
