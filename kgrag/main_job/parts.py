"""The main job's parts, none of which prints: which dataset it runs on, its training budgets, the examples it
picks (a SPARQL question, g_agent paths, validation questions), the stage clock and the knowledge network it loads
in the background. :mod:`kgrag.main_job.run` runs and prints the stages; bench/ reuses the budgets. Nothing in
kgrag, flows/ or graphs/ imports this package but the command that runs it (tests/test_architecture.py): what the
main job shares with them lives in kgrag proper (the splits in :mod:`kgrag.hrag.retrieval.pipeline`, loading a
named network once in :mod:`kgrag.network.loaders.registry`).

    from kgrag.main_job.parts import RUN_RETRIEVER_CONFIG, default_dataset
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kgrag.config import Settings, get_settings
from kgrag.data.registry import dataset_spec
from kgrag.graph.csr import CSRGraph
from kgrag.graph.queries import one_hop_names, one_hop_query
from kgrag.graph.versions.stores import open_store
from kgrag.hrag.online.file_eval import strip_brackets
from kgrag.hrag.online.reasoner import loaded_reasoner
from kgrag.hrag.retrieval.g_agent import GAgentSplit
from kgrag.hrag.retrieval.pipeline import g_agent_file
from kgrag.hrag.retrieval.questions import prepared_questions
from kgrag.network.loaders.registry import ensure_network, network_loaded
from kgrag.network.store import NetworkStore
from kgrag.prep.steps import read_prepared_questions


def default_dataset(settings: Settings) -> str:
    """MetaQA when its KB is in the data dir, else the generated demo KG."""
    return "metaqa" if (settings.data_dir / "metaqa" / "kb.txt").is_file() else "demo"


@dataclass
class SparqlExample:
    question: str
    gold: list[str]
    query: str
    answers: list[str]

    @property
    def matches(self) -> bool:
        return sorted(set(self.gold)) == sorted(set(self.answers))


def _linking_relation(graph: CSRGraph, topic: int, answers: set[int]) -> tuple[str, str] | None:
    """The relation (and direction) most often linking ``topic`` to its answers in the graph."""
    votes: Counter[tuple[str, str]] = Counter()
    for e in graph.out_edges(topic).tolist():
        if int(graph.tail[e]) in answers:
            votes[(graph.relations[graph.rel[e]], "out")] += 1
    for e in graph.in_edges(topic).tolist():
        if int(graph.head[e]) in answers:
            votes[(graph.relations[graph.rel[e]], "in")] += 1
    return votes.most_common(1)[0][0] if votes else None


def sparql_example(dataset: str, settings: Settings | None = None, prefer_qtype: str = "director_to_movie") -> SparqlExample | None:
    """Answer one 1-hop validation question (a director's films on MetaQA) with SPARQL on the configured store."""
    settings = settings or get_settings()
    out_dir: Path = settings.dataset_dir(dataset)
    graph = CSRGraph.load(out_dir / "graph.npz")
    questions = [q for q in read_prepared_questions(out_dir) if q.get("hop") in (1, None) and q["topic_ids"] and q["answer_ids"]]
    # a validation question of the preferred type with a few answers makes the clearest example
    questions.sort(key=lambda q: (q.get("qtype") != prefer_qtype, q["split"] != "validation",
                                  not 3 <= len(q["answer_ids"]) <= 8, q["qid"]))
    with open_store(dataset_spec(dataset, settings), settings) as store:
        for q in questions[:50]:
            topic = graph.key_index[q["topic_ids"][0]]
            link = _linking_relation(graph, topic, {graph.key_index[a] for a in q["answer_ids"]})
            if link is None:
                continue
            relation, direction = link
            entity_id = graph.entity_ids[topic]
            query = one_hop_query(graph.iri_base, entity_id, relation, direction)
            answers = one_hop_names(store, graph.iri_base, entity_id, relation, direction)
            gold = [graph.entity_names[graph.key_index[a]] or a for a in q["answer_ids"]]
            return SparqlExample(question=q["text"], gold=gold, query=query, answers=answers)
    return None


#: the retriever budget of ``make run`` (the full budget is ``kgrag train-retriever`` with the defaults: every
#: question, 6 epochs): a seeded 2,000 train and 1,000 validation questions get samples and g_agent, a seeded 4,000
#: train questions relation-chain labels (the chain prior's and the planner's), whatever the graph's size
RUN_RETRIEVER_CONFIG = {"max_train_questions": 2000, "epochs": 3, "early_stop_questions": 300,
                        "max_validation_questions": 1000, "max_chain_questions": 4000}


def g_agent_example(settings: Settings, dataset: str, split: str, top: int = 5) -> list[str]:
    """Lines showing one multi-hop question of ``split``'s g_agent: its best-scored triples, answers marked."""
    path = g_agent_file(settings, dataset, split)
    if not path.is_file():
        return []
    g_agent = GAgentSplit.load(path)
    graph = CSRGraph.load(settings.dataset_dir(dataset) / "graph.npz")
    hops = g_agent.hops.tolist()
    pick = next((i for i, h in enumerate(hops) if h == 2), 0) if hops else None
    if pick is None:
        return []
    sample = g_agent.sample(pick)
    answers = set(sample["node_ids"][sample["answer_local"]].tolist())
    lines = [f"Question ({split}, {sample['hop']}-hop): {sample['question']}",
             f"g_agent: {sample['edge_head'].numel()} triples; top {top} by retriever score (* = answer entity):"]
    for j in range(min(top, sample["edge_head"].numel())):
        h, r, t = (int(sample[k][j]) for k in ("edge_head", "edge_relation", "edge_tail"))
        name = [(graph.entity_names[e] or graph.entity_ids[e]) + ("*" if e in answers else "") for e in (h, t)]
        lines.append(f"  {float(sample['edge_scores'][j]):7.3f}  ({name[0]}, {graph.relations[r]}, {name[1]})")
    return lines


#: the GFlowNet budget of ``make run`` on MetaQA (the full budget is ``kgrag train-gflownet`` with the defaults:
#: 2000 planner warm-up steps, 1000 TB steps): answers come from the planner's chain search, which its warm-up
#: teaches within a few hundred steps; the TB steps train the encoder the beam reasoner uses
RUN_GFLOWNET_CONFIG: dict = {"steps": 20, "checkpoint_every": 10, "validation_questions": 300, "plan_warmup": 600,
                              "max_plan_questions": RUN_RETRIEVER_CONFIG["max_chain_questions"]}
#: the demo KG has 18 questions: a few dozen steps show the stage
DEMO_GFLOWNET_CONFIG: dict = {"steps": 40, "checkpoint_every": 20, "batch_questions": 18}


def gflownet_budget(dataset: str) -> dict:
    return DEMO_GFLOWNET_CONFIG if dataset == "demo" else RUN_GFLOWNET_CONFIG


def example_questions(settings: Settings, dataset: str, split: str, count: int = 2) -> list:
    """``count`` questions of ``split`` to show: the first 2-hop and the first 3-hop one, else the first ones."""
    questions = prepared_questions(settings.dataset_dir(dataset), [split])
    picks = [next((q for q in questions if q.hop == hop), None) for hop in (2, 3)]
    return ([q for q in picks if q is not None] or questions[:count])[:count]


def answer_examples(settings: Settings, dataset: str, split: str, count: int = 2) -> list[str]:
    """The :func:`example_questions` answered in memory by the online reasoner, their topic brackets removed (the
    linker finds the topic in the text): ranked answers, the answer set and the best answer's paths."""
    reasoner = loaded_reasoner(dataset, settings)
    lines: list[str] = []
    for q in example_questions(settings, dataset, split, count):
        answer = reasoner.answer(strip_brackets(q.text))
        gold = {reasoner.graph.entity_names[e] or reasoner.graph.entity_ids[e] for e in q.answers}
        lines += ["", *answer.lines(),
                  f"  answer set ({len(answer.predicted)}): {', '.join(answer.predicted[:8])}"
                  f"{' …' if len(answer.predicted) > 8 else ''}; gold {len(gold)}, "
                  f"{len(gold & set(answer.predicted))} found; {answer.ms['total']:.0f} ms"]
    return lines


class StageClock:
    """Wall time per stage of ``make run``: ``lap(name)`` closes the stage that ran since the last lap."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.stages: list[tuple[str, float]] = []

    def lap(self, name: str) -> float:
        now = time.perf_counter()
        self.stages.append((name, now - self.last))
        self.last = now
        return self.stages[-1][1]

    @property
    def total(self) -> float:
        return time.perf_counter() - self.start


#: two questions make run's agent stage answers on the medical network (one relation, one property question)
MEDICAL_AGENT_QUESTIONS = ("上气道梗阻有哪些症状", "哪些人容易得百日咳")


def agent_network(settings: Settings) -> str:
    """The network make run's agent stage uses: the medical network when its data is there, else the demo one."""
    return "medical" if (settings.data_dir / "medical" / "diseases").is_dir() else "demo"


class NetworkLoad:
    """make run's knowledge network, loaded in a child process while the H-RAG stages run: a first load of the
    medical network trains its domain vectors (minutes on 2 cores), work that does not need the H-RAG stages.
    :meth:`wait` joins it and returns its seconds (None when nothing was loaded in the background)."""

    def __init__(self, settings: Settings) -> None:
        self.kn_id = agent_network(settings)
        store = NetworkStore(settings.db_url)
        try:
            loaded = network_loaded(store, self.kn_id)
        finally:
            store.close()
        self._process = None
        self.started = not loaded
        if not loaded:
            context = multiprocessing.get_context("spawn")
            self._seconds = context.Queue()
            # not a daemon: the load tokenises with a process pool of its own; close() stops it if make run ends
            self._process = context.Process(target=_load_in_child, args=(self.kn_id, self._seconds),
                                            name=f"load-{self.kn_id}")
            self._process.start()

    def wait(self) -> float | None:
        if self._process is None:
            return None
        self._process.join()
        seconds = None if self._seconds.empty() else float(self._seconds.get())
        self._process = None
        return seconds  # None also when the child failed: the agent stage then loads in-process, errors shown

    def close(self) -> None:
        """Stop a load still running (make run ended before its agent stage)."""
        if self._process is not None and self._process.is_alive():
            self._process.terminate()
            self._process.join()
        self._process = None


def _load_in_child(kn_id: str, seconds) -> None:
    settings = get_settings()
    start = time.perf_counter()
    store = NetworkStore(settings.db_url)
    try:
        ensure_network(store, kn_id, settings.data_dir)
    finally:
        store.close()
    seconds.put(time.perf_counter() - start)


def agent_questions(store, kn_id: str) -> list[str]:
    """Two questions for make run's agent stage: the medical ones, or ones built from the network's own data
    (a linked instance's name + the relation type's name) for any other network."""
    if kn_id == "medical":
        return list(MEDICAL_AGENT_QUESTIONS)
    network = store.get_network(kn_id)
    out: list[str] = []
    for rt in network.relation_types:
        for inst in store.query_instances(kn_id, rt.source_object_type_id, None, limit=20):
            if store.linked_ids(kn_id, rt.id, [inst.id], True) and inst.properties.get("name"):
                out.append(f"{inst.properties['name']} {rt.name}")
                break
        if len(out) == 2:
            break
    return out
