"""H-RAG (spec h-rag.md, the H-RAG specification of a triple retriever and a GFlowNet path reasoner), three
layers that import one way only, retrieval ← gflownet ← online:

- :mod:`kgrag.hrag.retrieval` — PPR retrieval subgraphs, shortest-path and chain labels, dense retriever, g_agent;
- :mod:`kgrag.hrag.gflownet` — the GFlowNet that builds evidence paths over g_agent;
- :mod:`kgrag.hrag.online` — the reasoner that answers a question with both.
"""
