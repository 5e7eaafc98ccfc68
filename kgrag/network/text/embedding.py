"""Which embedder a network's vectors are made with: Chinese networks get Chinese vectors.

    embedder = network_embedder(network, instances, settings)   # None = the store's default embedder

The offline MiniLM has no Chinese vocabulary, so a network whose instance names are mostly Chinese is embedded
with ``Settings.zh_embedder``: ``"domain"`` (the default) = FastText vectors trained on the network's own texts
(:mod:`kgrag.rank.train_domain`), kept in ``<work_dir>/models/embeddings/<kn_id>`` and trained on the first load
that finds none (minutes for the medical network; ``flows/train_embeddings.py`` retrains); any other value is an
embedder name for :func:`kgrag.rank.embedder_factory.make_embedder` (a multilingual sentence-transformers model, a
``fasttext:<folder>``); ``""`` keeps ``Settings.embedder`` for every network. The store records the model's
name, and queries of that network embed with the same model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import islice

from kgrag.config import Settings
from kgrag.network.schema.model import Instance, KnowledgeNetwork
from kgrag.rank.domain import META_FILE
from kgrag.rank.embedder_factory import TextEmbedder, make_embedder
from kgrag.rank.tokenize import has_cjk
from kgrag.rank.train_domain import (
    DomainEmbeddingConfig,
    distinct_texts,
    domain_model_dir,
    property_strings,
    train_domain_embeddings,
)

__all__ = ["instance_corpus", "is_chinese", "network_embedder"]

SAMPLE = 2000


def is_chinese(network: KnowledgeNetwork, instances: Iterable[Instance]) -> bool:
    """Whether most instance names (a sample of the first 2,000) contain Chinese characters."""
    keys = {ot.id: ot.display_key for ot in network.object_types}
    names = [str(i.properties.get(keys.get(i.object_type_id, "name"), "")) for i in islice(instances, SAMPLE)]
    names = [n for n in names if n]
    return bool(names) and sum(has_cjk(n) for n in names) * 2 > len(names)


def instance_corpus(instances: Iterable[Instance]) -> list[str]:
    """Every text value of every instance (names included), each distinct text once — the corpus
    ``flows/train_embeddings.py`` trains on from the store (:func:`kgrag.network.domain_vectors.network_texts`)."""
    return distinct_texts(("", property_strings(inst.properties)) for inst in instances)


def network_embedder(network: KnowledgeNetwork, instances: Iterable[Instance], settings: Settings,
                     log: Callable[[str], None] | None = None) -> TextEmbedder | None:
    """The embedder to load ``network`` with, or None for the store's default (see the module docstring)."""
    choice = settings.zh_embedder.strip()
    if not choice or not is_chinese(network, instances):
        return None
    if choice != "domain":
        return make_embedder(choice, settings.cache_dir)
    folder = domain_model_dir(settings, network.kn_id)
    if not (folder / META_FILE).is_file():
        say = log or (lambda _line: None)
        say(f"training domain embeddings for {network.kn_id!r} on its texts → {folder}")
        train_domain_embeddings(instance_corpus(instances), folder,
                                DomainEmbeddingConfig(**settings.domain_embedding), log=say)
    return make_embedder(f"fasttext:{folder}", settings.cache_dir)
