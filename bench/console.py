"""The console page in headless Chromium against ``kgrag serve``: its weight, how soon the first step shows after a
question is submitted, and the screenshots the README shows.

    python -m bench.console [--questions 10] [--no-screenshots]

Server: ``kgrag serve`` (one process, warmed by a first question per source) on the project's own work dir and
database (the demo KG must be prepared: ``kgrag prepare --dataset demo``; the medical network loaded: ``make run``).
Page weight: the bytes of the page and of every script and style it names (vendored cytoscape too), as served.
Latency, on the demo KG, per question from its generated test split (``--questions`` of them, first ones):
**first step** = submit → the first ``[data-step]`` element in the DOM (the page's own ``performance.now()``),
**answer** = submit → the evidence drawn. Baseline in the same run: ``POST /agent/ask`` (the whole answer in one
response, what a page without streaming waits for) on the same questions; ratio = first step / baseline.
Screenshots (docs/): the ask view on the medical network, its evidence graph, a large evidence graph, and a
query graph's step on the demo KG (``query_graph_screenshot``).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import ms_percentiles, write_result

DOCS = Path(__file__).resolve().parents[1] / "docs"
ASK_VIEW = "百日咳有哪些症状"
LARGE_VIEW = "维生素A摄入过多有哪些并发症"
#: a question whose query graph extends the path to the answer type asked (the demo KG, untrained)
QUERY_GRAPH_VIEW = "in which country was Ines Kamau born?"


def progress(message: str) -> None:
    print(f"[bench.console] {message}", flush=True)


def _demo_questions(n: int) -> list[str]:
    from kgrag.config import get_settings

    path = get_settings().dataset_dir("demo") / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["text"] for r in rows][:n]


def _ask_in_page(page: Any, url: str, source: str, question: str) -> dict[str, Any]:
    page.goto(f"{url}/?{source}")
    page.wait_for_selector("body[data-ready=true]")
    page.fill("[data-role=question]", question)
    page.press("[data-role=question]", "Enter")
    turn = page.locator("[data-role=turn]").last
    turn.locator("[data-role=evidence], [data-role=error]").first.wait_for(timeout=180_000)
    evidence = turn.locator("[data-role=evidence]")
    return {"first_step_ms": float(turn.get_attribute("data-first-step-ms") or "nan"),
            "answer_ms": float(turn.get_attribute("data-total-ms") or "nan"),
            "nodes": int(evidence.get_attribute("data-nodes") or 0) if evidence.count() else 0,
            "answer": turn.locator("[data-role=answer]").inner_text() if turn.locator("[data-role=answer]").count()
            else ""}


def _weight(url: str) -> dict[str, int]:
    """The bytes of the page and of every script, style and icon it names, as served."""
    page = httpx.get(url + "/", timeout=30)
    page.raise_for_status()
    sizes = {"/": len(page.content)}
    for path in re.findall(r'(?:src|href)="(console/assets/[^"]+)"', page.text):
        res = httpx.get(f"{url}/{path}", timeout=30)
        res.raise_for_status()
        sizes["/" + path] = len(res.content)
    return sizes


def query_graph_screenshot(browser: Any, url: str, out: Path = DOCS / "console-query-graph.png") -> dict[str, Any]:
    """The demo KG's answer to :data:`QUERY_GRAPH_VIEW` with its query-graph step, as a PNG."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    shown = _ask_in_page(page, url, "kg=demo", QUERY_GRAPH_VIEW)
    page.locator("[data-role=turn]").last.screenshot(path=str(out))
    page.close()
    return {"question": QUERY_GRAPH_VIEW, "answer": shown["answer"], "nodes": shown["nodes"]}


def _screenshots(browser: Any, url: str) -> dict[str, Any]:
    DOCS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    shown = _ask_in_page(page, url, "kn=medical", ASK_VIEW)
    page.screenshot(path=str(DOCS / "console-ask.png"), full_page=False)
    page.locator("[data-role=evidence]").last.screenshot(path=str(DOCS / "console-evidence.png"))
    large = _ask_in_page(page, url, "kn=medical", LARGE_VIEW)
    page.locator("[data-role=evidence]").last.screenshot(path=str(DOCS / "console-evidence-large.png"))
    page.close()
    plan = query_graph_screenshot(browser, url)
    return {"query_graph_view": plan, "ask_view": {"question": ASK_VIEW, "nodes": shown["nodes"]},
            "large_view": {"question": LARGE_VIEW, "nodes": large["nodes"], "answer_ms": round(large["answer_ms"], 1)}}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from harness.servers.kgrag_serve import kgrag_serve
    from kgrag.console.browser import headless_chromium

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--no-screenshots", action="store_true")
    args = parser.parse_args(argv)
    questions = _demo_questions(args.questions)
    with kgrag_serve({"KGRAG_LLM_BASE_URL": ""}, Path(tempfile.mkdtemp(prefix="bench-console-"))) as url, \
            headless_chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        progress("warming the server on the demo KG and the medical network")
        _ask_in_page(page, url, "kg=demo", questions[0])
        _ask_in_page(page, url, "kn=medical", ASK_VIEW)
        weight = _weight(url)
        progress(f"page weight {sum(weight.values()) / 1024:.0f} KiB: {weight}")
        first, total, baseline = [], [], []
        for question in questions:
            seen = _ask_in_page(page, url, "kg=demo", question)
            first.append(seen["first_step_ms"])
            total.append(seen["answer_ms"])
            started = time.perf_counter()
            httpx.post(f"{url}/agent/ask", json={"question": question, "kg": "demo"}, timeout=120).raise_for_status()
            baseline.append((time.perf_counter() - started) * 1000)
            progress(f"{question!r}: first step {seen['first_step_ms']:.0f} ms, answer {seen['answer_ms']:.0f} ms, "
                     f"/agent/ask {baseline[-1]:.0f} ms")
        page.close()
        shots = {} if args.no_screenshots else _screenshots(browser, url)
    figures = {"page_bytes": sum(weight.values()), "page_files": weight,
               "first_step_ms": ms_percentiles(first, 1), "answer_ms": ms_percentiles(total, 1), **shots}
    base = {"agent_ask_ms": ms_percentiles(baseline, 1)}
    ratio = round(statistics.median(first) / statistics.median(baseline), 3)
    return write_result("console", figures, base, {"first_step_over_agent_ask_p50": ratio},
                        "demo KG test questions (first N), warm server", len(questions))


if __name__ == "__main__":
    main()
