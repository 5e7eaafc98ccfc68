"""System 2 of H-RAG (spec h-rag.md, the H-RAG specification of a triple retriever and a GFlowNet path
reasoner, §4.2, §4.3): a GFlowNet that builds topologically continuous evidence paths."""
