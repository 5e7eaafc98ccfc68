"""Run every benchmark: ``python -m bench`` (``make bench``)."""

from __future__ import annotations

from bench import embedder, kgtools, load_graph, neighbourhood, prepare

if __name__ == "__main__":
    load_graph.main()
    neighbourhood.main([])
    embedder.main([])
    prepare.main()
    kgtools.main([])
