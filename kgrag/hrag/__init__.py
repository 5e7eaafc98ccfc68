"""H-RAG (spec h-rag.md): PPR retrieval subgraphs, shortest-path labels, dense retriever, g_agent, GFlowNet."""
