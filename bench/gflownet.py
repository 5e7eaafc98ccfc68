"""H-RAG System 2 on MetaQA: GFlowNet answers vs retriever-score baselines, training speed, TB vs SubTB.

Figures in one run (needs the retriever stage's ``validation_g_agent.pt`` and a trained policy,
``kgrag train-gflownet``):
- Hits@1 / Hit / F1 per hop on the validation split (held out from the dev questions; also the split the policy's
  checkpoint and F1 threshold were chosen on), LLM-free, denominators = every validation question;
- the same for two baselines on the same g_agent: (a) the retriever's top-scored triple's answer end, (b) a greedy
  walk from the topics along the best-scored edges, its stop score tuned on the same split for Hits@1;
- training throughput (trajectories/s) and the training time at each checkpoint of the run (from its history);
- ``--compare-objectives N``: TB and SubTB trained with the same config for N steps each, validation-sample Hits@1
  per checkpoint and seconds.
Run: ``python -m bench.gflownet [--compare-objectives 300]``; writes bench/results/gflownet.json.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from bench.common import write_result
from kgrag.config import get_settings
from kgrag.hrag import pipeline as retrieval
from kgrag.hrag.g_agent import GAgentSplit
from kgrag.hrag.gflownet import pipeline
from kgrag.hrag.gflownet.answers import answer_metrics, summarise
from kgrag.hrag.gflownet.baselines import choose_stop_score, greedy_walk_answers, top_triple_answers
from kgrag.hrag.gflownet.evaluate import answer_data, load_trained_policy, metrics_table
from kgrag.hrag.gflownet.train import train_gflownet
from kgrag.hrag.text import TextEmbeddings
from kgrag.rank.embedder import Embedder


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--checkpoint", default=None, help="policy best.pt (default: the latest trained)")
    parser.add_argument("--compare-objectives", type=int, default=0, metavar="STEPS")
    args = parser.parse_args()
    torch.set_num_threads(2)
    settings = get_settings()
    graph = retrieval.load_graph(settings, args.dataset)
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
    print(f"## GFlowNet (beam search, threshold {trained.threshold:.2f})\n{metrics_table(answers.report)}")
    print("## Baseline (a): retriever's top triple\n" + metrics_table(top))
    print(f"## Baseline (b): greedy walk on retriever scores (stop score {stop:.3f})\n" + metrics_table(greedy))

    state = torch.load(trained.checkpoint.parent / "last.pt", map_location="cpu", weights_only=True)
    history = state["history"]
    training = {"steps": history[-1]["step"] if history else 0,
                "train_seconds": round(state["train_seconds"], 1),
                "trajectories_per_s": round(history[-1]["trajectories_per_s"], 1) if history else 0.0,
                "curve": [(r["step"], round(r["train_seconds"], 1), round(r["val_hits@1"], 4)) for r in history],
                "best_step": int(torch.load(trained.checkpoint, weights_only=True)["step"])}
    figures = {"gflownet": answers.report, "threshold": trained.threshold,
               "answer_seconds": round(answer_seconds, 1),
               "answer_questions_per_s": round(len(data) / answer_seconds, 1), "training": training,
               "config": trained.config.model_dump(), "checkpoint": str(trained.checkpoint)}
    if args.compare_objectives:
        figures["objectives"] = compare_objectives(settings, args.dataset, trained.config.model_dump(),
                                                   args.compare_objectives, text)
    ratio = {name: round(answers.report["all"]["hits@1"] / max(base["all"]["hits@1"], 1e-9), 3)
             for name, base in (("vs_top_triple", top), ("vs_greedy_walk", greedy))}
    write_result("gflownet", figures, {"top_triple": top, "greedy_walk": {"stop_score": stop, **greedy}}, ratio,
                 "validation", len(data))


if __name__ == "__main__":
    main()
