"""The online agent as a LangGraph graph (``graph.py``), its state (``state.py``) and run context (``context.py``)."""
