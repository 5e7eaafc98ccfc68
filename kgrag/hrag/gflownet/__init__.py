"""System 2 of H-RAG (spec h-rag.md §4.2, §4.3): a GFlowNet that builds topologically continuous evidence paths."""
