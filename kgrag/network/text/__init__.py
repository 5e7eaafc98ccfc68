"""What a network's texts become, shared by the store and the loaders: retrievable chunks of long texts
(:mod:`~kgrag.network.text.chunking`), other names read from free text (:mod:`~kgrag.network.text.aliases`) and
the embedder a network's vectors are made with (:mod:`~kgrag.network.text.embedding`). Imports only
:mod:`kgrag.network.schema` of ``kgrag.network``."""
