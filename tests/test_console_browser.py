"""The console page in a real headless Chromium (Debian's, driven by Playwright) against ``kgrag serve``: asking
on the demo KG and on the medical network streams the steps in order and draws the evidence; a follow-up stays in
the thread; the ``?kn=&q=`` link asks at once; the schema view and the playground's kn_search table; the errors a
person meets (unknown network, empty question, server down) and the API-key prompt."""

from __future__ import annotations

import json

import httpx
import pytest

NODES = ["extract_keywords", "schema_recall", "contextual_recall", "plan", "tools", "plan", "answer"]
#: a triple KG without a trained reasoner plans a query graph: it is a step of its own once planned
KG_NODES = ["extract_keywords", "schema_recall", "contextual_recall", "plan", "tools", "plan", "query_graph", "answer"]
WAIT_MS = 120_000  # the first question of a network loads its models in the server


def _steps(turn) -> list[str]:
    return turn.locator("[data-step]").evaluate_all("els => els.map(e => e.dataset.step)")


def _finished(page, turn_index: int = 0):
    turn = page.locator("[data-role=turn]").nth(turn_index)
    turn.locator("[data-role=answer], [data-role=error]").first.wait_for(timeout=WAIT_MS)
    return turn


def _tap(page, turn_index: int, node_id: str) -> None:
    page.evaluate("([i, id]) => document.querySelectorAll('[data-role=evidence]')[i].cy.$id(id).emit('tap')",
                  [turn_index, node_id])


def test_ask_on_the_demo_kg_streams_steps_draws_evidence_and_follows_up(console_url, browser) -> None:
    page = browser.new_page()
    page.goto(f"{console_url}/?kg=demo")
    page.wait_for_selector("body[data-ready=true]")
    assert page.locator("#source").input_value() == "kg:demo"
    page.fill("[data-role=question]", "who is Jonas Quintero's spouse?")
    page.press("[data-role=question]", "Enter")
    turn = _finished(page)
    assert _steps(turn) == KG_NODES
    assert "Greta Ishikawa" in turn.locator("[data-role=answer]").inner_text()
    plan = turn.locator("[data-step=query_graph] [data-role=query-graph]").inner_text()
    assert plan.startswith("Jonas Quintero ") and "?answer" in plan
    assert "confidence" in turn.locator("[data-step=query_graph]").inner_text()
    evidence = turn.locator("[data-role=evidence]")
    labels = evidence.get_attribute("data-labels").split("\u241f")
    assert {"Jonas Quintero", "Greta Ishikawa"} <= set(labels)
    assert int(evidence.get_attribute("data-nodes")) >= 2 and int(evidence.get_attribute("data-edges")) >= 1
    # a click on the topic shows its triples on the store
    _tap(page, 0, "m.0c0gr")
    triples = turn.locator("[data-role=node-info] table[data-table=triples]")
    triples.wait_for()
    assert "Jonas Quintero" in triples.inner_text()

    page.fill("[data-role=question]", "which teams has he played for?")
    page.press("[data-role=question]", "Enter")
    follow = _finished(page, 1)
    assert _steps(follow) == KG_NODES
    assert "Jonas Quintero" in follow.locator("[data-step=contextual_recall]").inner_text()
    assert not follow.locator("[data-role=error]").count()

    page.click("[data-role=new-conversation]")
    assert page.locator("[data-role=turn]").count() == 0
    assert page.evaluate("window.kgragConsole.history.length") == 0
    page.close()


def test_a_link_asks_on_the_medical_network_at_once(console_url, browser) -> None:
    page = browser.new_page()
    page.goto(f"{console_url}/?kn=medical&q=%E7%99%BE%E6%97%A5%E5%92%B3%E6%9C%89%E5%93%AA%E4%BA%9B%E7%97%87%E7%8A%B6")
    turn = _finished(page)
    assert page.locator("[data-role=question]").input_value() == ""
    assert turn.locator("[data-role=asked]").inner_text() == "百日咳有哪些症状"
    assert _steps(turn) == NODES
    assert "痉挛性咳嗽" in turn.locator("[data-role=answer]").inner_text()
    assert "rel:has_symptom" in turn.locator("[data-step=schema_recall]").inner_text()
    assert "query_instance_subgraph" in turn.locator("[data-step=tools]").inner_text()
    evidence = turn.locator("[data-role=evidence]")
    assert int(evidence.get_attribute("data-nodes")) == 9 and int(evidence.get_attribute("data-edges")) == 8
    assert {"百日咳", "痉挛性咳嗽", "低热"} <= set(evidence.get_attribute("data-labels").split("\u241f"))
    _tap(page, 0, "Disease:百日咳")
    props = turn.locator("[data-role=node-info] table[data-table=properties]")
    props.wait_for()
    assert "百日咳杆菌" in props.inner_text()
    page.close()


def test_schema_view_and_playground_kn_search_table(console_url, medical_db, browser) -> None:
    from kgrag.access.audit import AuditLog
    from kgrag.network.store.core import make_engine

    engine = make_engine(medical_db)  # a change as the HTTP change routes record it (the audit log)
    try:
        AuditLog(engine).append("loader-key", "kn.changes", "kn", "medical", "aaaa1111", "bbbb2222",
                                {"instances_inserted": 3})
    finally:
        engine.dispose()
    page = browser.new_page()
    page.goto(f"{console_url}/?kn=medical&tab=schema")
    types = page.locator("[data-role=schema] table[data-table=object_types]")
    types.wait_for(timeout=WAIT_MS)
    assert "Disease" in types.inner_text()
    assert "has_symptom" in page.locator("table[data-table=relation_types]").inner_text()
    changes = page.locator("[data-role=schema] table[data-table=changes]")
    changes.wait_for(timeout=WAIT_MS)
    assert "loader-key" in changes.inner_text() and "instances_inserted 3" in changes.inner_text()

    page.click("[data-tab=playground]")
    page.fill("[data-role=play-query]", "百日咳有哪些症状")
    page.click("[data-role=play-run]")
    concepts = page.locator("[data-role=playground-result] table[data-table=concepts]")
    concepts.wait_for(timeout=WAIT_MS)
    assert "has_symptom" in concepts.inner_text()
    assert "百日咳" in page.locator("table[data-table=instances]").inner_text()
    raw = json.loads(page.locator("[data-role=raw-json]").text_content())
    assert raw["relation_types"] and raw["nodes"]

    page.select_option("[data-role=tool]", "query")
    page.select_option("[data-role=mode]", "local")
    page.click("[data-role=play-run]")
    page.locator("table[data-table=entities]").wait_for(timeout=WAIT_MS)
    assert "百日咳" in page.locator("table[data-table=entities]").inner_text()
    page.close()


def test_errors_are_messages_on_the_page(console_url, browser) -> None:
    page = browser.new_page()
    page.goto(f"{console_url}/?kn=nope&q=%E7%99%BE%E6%97%A5%E5%92%B3")
    error = _finished(page).locator("[data-role=error]")
    assert "unknown knowledge network 'nope'" in error.inner_text()

    page.goto(f"{console_url}/?kg=demo")
    page.wait_for_selector("body[data-ready=true]")
    page.press("[data-role=question]", "Enter")
    assert "the question is empty" in page.locator("[data-role=error]").inner_text()

    page.route("**/agent/stream", lambda route: route.abort())  # the server is gone
    page.fill("[data-role=question]", "who directed Carnival Lights?")
    page.press("[data-role=question]", "Enter")
    down = page.locator("[data-role=turn]").nth(1).locator("[data-role=error]")
    down.wait_for()
    assert "the server did not answer" in down.inner_text()
    page.close()


def test_the_page_asks_for_the_api_key(console_key_url, browser) -> None:
    assert httpx.get(f"{console_key_url}/").status_code == 200  # the page and its assets need no key
    assert httpx.get(f"{console_key_url}/console/assets/console.js").status_code == 200
    assert httpx.get(f"{console_key_url}/console/api/sources").status_code == 401
    page = browser.new_page()
    page.goto(f"{console_key_url}/?kg=demo&q=who+directed+Carnival+Lights%3F")
    form = page.locator("[data-role=api-key-form]")
    form.wait_for()
    assert "needs an API key" in page.locator("[data-role=error]").first.inner_text()
    page.fill("[data-role=api-key]", "console-key")
    page.click("[data-role=api-key-form] button")
    turn = _finished(page)
    assert "Uma Halvorsen" in turn.locator("[data-role=answer]").inner_text()
    assert form.is_hidden()
    page.close()


@pytest.mark.parametrize("path", ["/", "/console/assets/console.js", "/console/assets/console.css",
                                  "/console/assets/vendor/cytoscape.min.js"])
def test_the_page_loads_from_the_server_alone(console_url, path) -> None:
    """No CDN: every script and style the page names is served by kgrag itself."""
    res = httpx.get(console_url + path)
    assert res.status_code == 200 and res.content
    if path == "/":
        assert "http://" not in res.text and "https://" not in res.text


def test_a_long_answer_and_a_200_node_evidence_stay_readable(console_url, browser) -> None:
    """The page fed a run (through the stream route's own event format) with a 20,000-character answer and 200
    evidence nodes: the answer scrolls in its box, the graph is drawn in its box without labels on every node."""
    from kgrag.console.evidence_graph import evidence_graph

    links = [{"source": "t", "relation_type": "r", "target": f"n{i}", "step": 0, "forward": True} for i in range(199)]
    rows = [{"value": f"n{i}", "value_instance": f"n{i}", "instance": "t", "instance_name": "T", "via": "r"}
            for i in range(199)]
    state = {"kn_id": "medical", "topic": {"instance_id": "t", "name": "T"}, "evidence": rows,
             "tool_calls": [{"name": "query_instance_subgraph", "result": {"nodes": {}, "links": links}}]}
    end = {"event": "end", "answer": "长" * 20_000, "answers": [f"n{i}" for i in range(199)], "errors": [],
           "evidence_graph": evidence_graph(state), "history": [], "session_id": None, "ms": 1.0}
    body = "\n".join(json.dumps(e) for e in [{"event": "start"}, {"event": "step", "node": "answer", "ms": 1.0,
                                                                   "summary": "s", "detail": {}}, end]) + "\n"
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.route("**/agent/stream", lambda route: route.fulfill(status=200, body=body,
                                                              content_type="application/x-ndjson"))
    page.goto(f"{console_url}/?kn=medical&q=x")
    turn = _finished(page)
    answer = turn.locator("[data-role=answer]")
    assert answer.bounding_box()["height"] < 400
    assert answer.evaluate("e => e.scrollHeight > e.clientHeight")
    evidence = turn.locator("[data-role=evidence]")
    assert evidence.get_attribute("data-nodes") == "200" and evidence.get_attribute("data-edges") == "199"
    assert evidence.locator("canvas").count() and evidence.bounding_box()["height"] < 700
    page.close()
