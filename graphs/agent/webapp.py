"""The inline ask route (``POST /agent/ask``, :mod:`kgrag.agent.inline_app`) mounted on the LangGraph API server
by langgraph.json ``http.app``; the same compiled ``graph`` as assistant ``agent``."""

from graphs.agent.context import AgentContext
from graphs.agent.graph import graph
from kgrag.agent.inline_app import make_app

app = make_app(graph, AgentContext)
