"""The online H-RAG reasoner: a question in, ranked answers with their paths out, over a prepared graph or a SPARQL
endpoint (entity linking, local PPR, the trained retriever, then the GFlowNet policy).

Sits on top of :mod:`kgrag.hrag.retrieval` and :mod:`kgrag.hrag.gflownet`; neither imports it."""
