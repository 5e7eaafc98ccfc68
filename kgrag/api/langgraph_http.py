"""What langgraph.json mounts on the LangGraph API server (``http.app``): the inline agent routes
(``POST /agent/ask``, ``POST /agent/stream``: :mod:`kgrag.api.agent_routes`, the same compiled graph as assistant
``agent``), the console page at ``/`` and the retrieval routes its playground calls
(:func:`kgrag.api.app.langgraph_app`). An entry point like ``kgrag serve``'s app, so it lives here, not in graphs/.

    langgraph dev --no-browser   # then open http://127.0.0.1:2024/
"""

from kgrag.api.app import langgraph_app

app = langgraph_app()
