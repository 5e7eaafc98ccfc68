"""H-RAG on MetaQA: answers, the chain in g_agent, answering speed, the online chain, baselines, training speed.

Figures in one run (needs the retriever stage's g_agent files and a trained policy, ``kgrag train-gflownet``), all
on the validation split (held out from the dev questions, seeded; also the split the policy's checkpoint and F1
threshold were chosen on), LLM-free, denominators = every validation question unless a sample is named:
- **chain in g_agent** at K: the share of questions whose label relation chain (read off the KG), walked inside
  g_agent, reaches a gold answer — with the chain prior and with the scorer alone (same scores, same K);
- **answering from g_agent**, Hits@1 / Hit / F1 per hop and questions/s: the planner's chain search (default) on
  every question; on a seeded sample (``--beam-sample``) the same and the encoder beam (width 16 and 4, with chain
  completion) and the old answering (beam 16, path ends only): the Hits@1 cost of each choice; each variant's F1
  threshold chosen on the sample;
- **the online chain** (:class:`~kgrag.hrag.online.reasoner.HRAGReasoner`): ``kgrag eval``'s path on per-hop validation
  files, with [brackets] and with them stripped (topics linked from the text), questions/s and seconds per stage;
  ``answer_question`` p50/p95 warm over a seeded sample of single questions;
- baselines on the same g_agent: (a) the retriever's top-scored triple's answer end, (b) a greedy walk along the
  best-scored edges, its stop score tuned on the same split for Hits@1;
- training throughput (trajectories/s) and the training time at each checkpoint (from the run's history);
- ``--compare-objectives N``: TB and SubTB trained with the same config for N steps each.
Run: ``python -m bench.gflownet [--beam-sample 400] [--single 200] [--compare-objectives 300]``; writes
bench/results/gflownet.json.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from bench.common import write_result
from kgrag.config import get_settings
from kgrag.hrag.gflownet import pipeline
from kgrag.hrag.gflownet.answers import answer_metrics, choose_threshold, summarise
from kgrag.hrag.gflownet.baselines import choose_stop_score, greedy_walk_answers, top_triple_answers
from kgrag.hrag.gflownet.evaluate import TrainedPolicy, answer_data, load_trained_policy, metrics_table
from kgrag.hrag.gflownet.train import AgentData, train_gflownet
from kgrag.hrag.online.file_eval import evaluate_file, strip_brackets
from kgrag.hrag.online.reasoner import HRAGReasoner
from kgrag.hrag.retrieval import pipeline as retrieval
from kgrag.hrag.retrieval.chain_labels import cached_chains
from kgrag.hrag.retrieval.chains import chains_held
from kgrag.hrag.retrieval.evaluate import evaluate_samples, load_trained
from kgrag.hrag.retrieval.g_agent import GAgentSplit
from kgrag.hrag.retrieval.questions import prepared_questions
from kgrag.hrag.retrieval.stage_inputs import load_graph
from kgrag.hrag.retrieval.text import TextEmbeddings
from kgrag.rank.sentence_embedder import Embedder


def compare_objectives(settings, dataset: str, config: dict, steps: int, text: TextEmbeddings) -> dict:
    """TB and SubTB, same config and budget, fresh runs in a temp folder."""
    from kgrag.hrag.gflownet.config import GFlowNetConfig

    out = {}
    train_agent = GAgentSplit.load(retrieval.g_agent_file(settings, dataset, "train"))
    val_agent = GAgentSplit.load(retrieval.g_agent_file(settings, dataset, "validation"))
    for objective in ("tb", "subtb"):
        cfg = GFlowNetConfig(**{**config, "objective": objective, "steps": steps})
        train = pipeline.agent_data(train_agent, text, pipeline.split_gold(settings, dataset, "train"),
                                    cfg.max_pool_edges, cfg.gt_walks, cfg.seed)
        validation = pipeline.agent_data(val_agent, text, pipeline.split_gold(settings, dataset, "validation"))
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            result = train_gflownet(cfg, train, validation, text.entities, text.relations, Path(folder))
            wall = time.perf_counter() - start
        out[objective] = {"curve": [(r["step"], round(r["val_hits@1"], 4)) for r in result.history],
                          "best_val_sample_hits@1": result.best_hits1, "train_seconds": round(result.train_seconds, 1),
                          "wall_seconds": round(wall, 1),
                          "trajectories_per_s": round(result.history[-1]["trajectories_per_s"], 1)}
    return out


def chain_in_g_agent(settings, dataset: str) -> dict:
    """Share of validation questions whose label chain reaches a gold answer inside g_agent, per hop: with the
    chain prior (what the pipeline writes) and with the scorer alone, from the same scores at the same K."""
    trained = load_trained(settings, dataset)
    samples = retrieval.split_samples(settings, dataset, trained.graph, "validation", trained.config)
    scored = evaluate_samples(trained, samples)
    questions = [samples.question(i) for i in range(len(samples))]
    labels = cached_chains(retrieval.hrag_dir(settings, dataset), trained.graph, [q.topics.tolist() for q in questions],
                           [q.answers.tolist() for q in questions], [q.hop for q in questions], 3)
    k = trained.config.anchor_top_k
    meta = {"split": "validation"}
    held = {"chain_prior": chains_held(trained.g_agent(samples, scored, False, meta), labels),
            "scorer_alone": chains_held(retrieval.build_g_agent(trained.graph, samples, scored.ptr, scored.scores, k,
                                                                False, meta), labels)}
    hops = np.array([q.hop for q in questions])
    out: dict = {"k": k}
    for name, ok in held.items():
        out[name] = {f"{h}-hop": round(float(ok[hops == h].mean()), 5) for h in sorted(set(hops.tolist()))}
        out[name]["all"] = round(float(ok.mean()), 5)
    out["n"] = {f"{h}-hop": int((hops == h).sum()) for h in sorted(set(hops.tolist()))}
    return out


def answer_variant(trained: TrainedPolicy, data: AgentData, entities: np.ndarray, **update) -> dict:
    """Answers of ``data`` with the policy's answering settings changed by ``update``; the F1 threshold chosen on
    ``data`` for this variant."""
    variant = TrainedPolicy(trained.policy, trained.config.model_copy(update=update), trained.threshold,
                            trained.checkpoint)
    start = time.perf_counter()
    answers = answer_data(variant, data, entities)
    seconds = time.perf_counter() - start
    threshold = choose_threshold(answers.ranked, data.gold)
    report = summarise(answer_metrics(answers.ranked, data.gold, threshold), data.hops)
    return {"report": report, "threshold": threshold, "seconds": round(seconds, 2),
            "questions_per_s": round(len(data) / seconds, 1)}


def online_chain(settings, dataset: str, single: int, folder: Path) -> dict:
    """kgrag eval's path on per-hop validation files (with and without brackets) and answer_question latency."""
    start = time.perf_counter()
    reasoner = HRAGReasoner.load(settings, dataset)
    out: dict = {"load_seconds": round(time.perf_counter() - start, 1)}
    questions = prepared_questions(settings.dataset_dir(dataset), ["validation"])
    keys = reasoner.graph.entity_keys
    for no_brackets in (False, True):
        name = "no_brackets" if no_brackets else "brackets"
        out[name] = {}
        for hop in sorted({q.hop for q in questions}):
            path = folder / f"validation_{hop}hop.txt"
            path.write_text("".join(f"{q.text}\t{'|'.join(keys[a] for a in q.answers)}\n"
                                    for q in questions if q.hop == hop))
            t0 = time.perf_counter()
            result = evaluate_file(reasoner, path, hop, no_brackets=no_brackets)
            seconds = time.perf_counter() - t0
            out[name][f"{hop}-hop"] = {**result.report["all"], "seconds": round(seconds, 1),
                                       "questions_per_s": round(result.report["all"]["n"] / seconds, 1),
                                       "linked_wrong": result.info["linked_wrong"], "unlinked": result.info["unlinked"],
                                       "stage_seconds": result.info["stage_seconds"]}
    picks = questions[:: max(1, len(questions) // single)][:single]
    reasoner.answer(strip_brackets(picks[0].text))
    totals, stages = [], {}
    for q in picks:
        answer = reasoner.answer(strip_brackets(q.text))
        totals.append(answer.ms["total"])
        for key, value in answer.ms.items():
            stages.setdefault(key, []).append(value)
    out["answer_question"] = {"n": len(picks), "p50_ms": round(float(np.median(totals)), 2),
                              "p95_ms": round(float(np.percentile(totals, 95)), 2),
                              "stage_p50_ms": {k: round(float(np.median(v)), 2) for k, v in stages.items()}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--checkpoint", default=None, help="policy best.pt (default: the latest trained)")
    parser.add_argument("--beam-sample", type=int, default=400, help="validation questions the beam variants answer")
    parser.add_argument("--single", type=int, default=200, help="single questions timed through answer_question")
    parser.add_argument("--compare-objectives", type=int, default=0, metavar="STEPS")
    args = parser.parse_args()
    torch.set_num_threads(2)
    settings = get_settings()
    graph = load_graph(settings, args.dataset)
    text = TextEmbeddings.for_graph(graph, retrieval.hrag_dir(settings, args.dataset), Embedder.from_settings(settings))
    trained = load_trained_policy(settings, args.dataset, Path(args.checkpoint) if args.checkpoint else None)
    g_agent = GAgentSplit.load(retrieval.g_agent_file(settings, args.dataset, "validation"))
    data = pipeline.agent_data(g_agent, text, pipeline.split_gold(settings, args.dataset, "validation"))

    start = time.perf_counter()
    answers = answer_data(trained, data, text.entities)
    answer_seconds = time.perf_counter() - start
    top = summarise(answer_metrics(top_triple_answers(g_agent), data.gold, 1.0), data.hops)
    stop = choose_stop_score(g_agent, data.gold, max_steps=trained.config.max_steps)
    greedy = summarise(answer_metrics(greedy_walk_answers(g_agent, stop, trained.config.max_steps), data.gold, 1.0),
                       data.hops)
    print(f"## GFlowNet ({trained.config.reasoner}, threshold {trained.threshold:.2f}, "
          f"{len(data) / answer_seconds:.1f} questions/s)\n{metrics_table(answers.report)}")
    print("## Baseline (a): retriever's top triple\n" + metrics_table(top))
    print(f"## Baseline (b): greedy walk on retriever scores (stop score {stop:.3f})\n" + metrics_table(greedy))

    rows = list(range(0, len(data), max(1, len(data) // args.beam_sample)))[: args.beam_sample]
    sample = AgentData([data.questions[i] for i in rows], data.tokens[rows], [data.gold[i] for i in rows])
    variants = {"planner chain search + completion (default)": {"reasoner": "planner"},
                "encoder beam 16 + completion": {"reasoner": "beam", "beam_width": 16},
                "encoder beam 4 + completion": {"reasoner": "beam", "beam_width": 4},
                "encoder beam 16, path ends (before)": {"reasoner": "beam", "beam_width": 16,
                                                        "chain_completion": False}}
    choices = {name: answer_variant(trained, sample, text.entities, **update) for name, update in variants.items()}
    for name, row in choices.items():
        print(f"## sample of {len(sample)}: {name}: {row['questions_per_s']} questions/s, threshold "
              f"{row['threshold']}\n{metrics_table(row['report'])}")
    held = chain_in_g_agent(settings, args.dataset)
    print(f"## chain in g_agent (K={held['k']}): with the prior {held['chain_prior']}, scorer alone "
          f"{held['scorer_alone']}")
    with tempfile.TemporaryDirectory() as folder:
        online = online_chain(settings, args.dataset, args.single, Path(folder))
    print(f"## online chain: {online}")

    state = torch.load(trained.checkpoint.parent / "last.pt", map_location="cpu", weights_only=True)
    history = state["history"]
    training = {"steps": history[-1]["step"] if history else 0,
                "train_seconds": round(state["train_seconds"], 1),
                "trajectories_per_s": round(history[-1]["trajectories_per_s"], 1) if history else 0.0,
                "curve": [(r["step"], round(r["train_seconds"], 1), round(r["val_hits@1"], 4)) for r in history],
                "best_step": int(torch.load(trained.checkpoint, weights_only=True)["step"])}
    figures = {"gflownet": answers.report, "threshold": trained.threshold, "reasoner": trained.config.reasoner,
               "answer_seconds": round(answer_seconds, 1),
               "answer_questions_per_s": round(len(data) / answer_seconds, 1),
               "answering_choices_sample": {"n": len(sample), **choices}, "chain_in_g_agent": held,
               "online": online, "training": training,
               "config": trained.config.model_dump(), "checkpoint": str(trained.checkpoint)}
    if args.compare_objectives:
        figures["objectives"] = compare_objectives(settings, args.dataset, trained.config.model_dump(),
                                                   args.compare_objectives, text)
    before = choices["encoder beam 16, path ends (before)"]
    default = choices["planner chain search + completion (default)"]
    ratio = {**{name: round(answers.report["all"]["hits@1"] / max(base["all"]["hits@1"], 1e-9), 3)
                for name, base in (("vs_top_triple", top), ("vs_greedy_walk", greedy))},
             "answer_speed_vs_before": round(default["questions_per_s"] / before["questions_per_s"], 1)}
    write_result("gflownet", figures, {"top_triple": top, "greedy_walk": {"stop_score": stop, **greedy},
                                       "before": before}, ratio, "validation", len(data))


if __name__ == "__main__":
    main()
