"""The agent graph served by ``langgraph dev`` and called through ``langgraph_sdk``: a waited run, a streamed run
showing every node's update, a thread whose follow-up carries only the new question, and bad input."""

from __future__ import annotations

from langgraph_sdk import get_sync_client

NODES = ["extract_keywords", "schema_recall", "contextual_recall", "plan", "tools", "plan", "answer"]


def test_served_agent_waits_streams_and_keeps_a_thread(langgraph_url: str) -> None:
    client = get_sync_client(url=langgraph_url)
    assert any(a["graph_id"] == "agent" for a in client.assistants.search())
    final = client.runs.wait(None, "agent", input={"question": "上气道梗阻有哪些症状", "kn_id": "medical"})
    assert final["topic"]["name"] == "上气道梗阻" and "呼吸困难" in final["answers"] and final["evidence"]

    updates = [part.data for part in client.runs.stream(None, "agent", input={"question": "百日咳吃什么药"},
                                                          stream_mode="updates") if part.event == "updates"]
    assert [next(iter(u)) for u in updates] == NODES
    assert updates[-1]["answer"]["answers"]

    thread = client.threads.create()
    first = client.runs.wait(thread["thread_id"], "agent", input={"question": "百日咳吃什么药", "kn_id": "medical"})
    assert first["topic"]["name"] == "百日咳"
    follow = client.runs.wait(thread["thread_id"], "agent", input={"question": "它有哪些症状"})
    assert follow["topic"]["name"] == "百日咳" and "痉挛性咳嗽" in follow["answers"]
    assert [t["question"] for t in follow["history"]] == ["百日咳吃什么药", "它有哪些症状"]

    bad = client.runs.wait(None, "agent", input={"question": "", "kn_id": "medical"})
    assert bad["done"] and "empty" in bad["answer"]
    unknown = client.runs.wait(None, "agent", input={"question": "百日咳吃什么药", "kn_id": "nope"})
    assert "unknown knowledge network 'nope'" in unknown["answer"]


def test_langgraph_dev_serves_the_console_and_the_stream_route(langgraph_url: str) -> None:
    """langgraph.json's ``http.app`` mounts the console page, its routes and ``POST /agent/stream``."""
    import json

    import httpx

    page = httpx.get(f"{langgraph_url}/")
    assert page.status_code == 200 and 'data-role="question"' in page.text
    assert httpx.get(f"{langgraph_url}/console/assets/vendor/cytoscape.min.js").status_code == 200
    sources = httpx.get(f"{langgraph_url}/console/api/sources").json()
    assert "medical" in {n["id"] for n in sources["networks"]}
    with httpx.stream("POST", f"{langgraph_url}/agent/stream", json={"question": "百日咳有哪些症状", "kn_id": "medical"},
                      timeout=120) as res:
        events = [json.loads(line) for line in res.iter_lines() if line]
    assert [e["node"] for e in events if e["event"] == "step"] == [*NODES[:4], "tools", "plan", "answer"]
    assert "痉挛性咳嗽" in events[-1]["answers"] and events[-1]["evidence_graph"]["nodes"]
    found = httpx.post(f"{langgraph_url}/api/agent-retrieval/in/v1/kn/kn_search",
                       json={"query": "百日咳", "kn_id": "medical"}, timeout=120)
    assert found.status_code == 200 and found.json()["nodes"]
