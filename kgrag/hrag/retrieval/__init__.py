"""System 1 of H-RAG (spec h-rag.md, the H-RAG specification of a triple retriever and a GFlowNet path
reasoner, §4.1, §4.4), the training side: questions and their text vectors, PPR retrieval subgraphs,
shortest-path and relation-chain labels, the dense triple retriever (training, evaluation) and g_agent.

Imports nothing else of ``kgrag.hrag``: :mod:`kgrag.hrag.gflownet` and :mod:`kgrag.hrag.online` build on it."""
