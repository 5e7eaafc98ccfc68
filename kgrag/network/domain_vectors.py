"""A network's own texts, read from the store: the corpus domain word vectors are trained on.

    texts = network_texts(NetworkStore(get_settings().db_url), "medical")   # then train_domain_embeddings(texts, …)

Contract: :func:`instance_texts` reads ``(object type id, name, {property: [texts]})`` for every instance of a
network, by type and id — string properties and the strings of list properties, stripped, blanks dropped
(:func:`kgrag.rank.train_domain.property_strings`); :func:`network_texts` flattens them into every name and
text, each distinct text once, in store order (:func:`kgrag.rank.train_domain.distinct_texts`). An unknown
network raises :class:`kgrag.errors.NetworkNotFound`. The training itself, on plain texts, is
:mod:`kgrag.rank.train_domain`.
"""

from __future__ import annotations

from sqlalchemy import select

from kgrag.network.schema import tables as t
from kgrag.network.store import NetworkStore
from kgrag.rank.train_domain import distinct_texts, property_strings

__all__ = ["instance_texts", "network_texts"]


def instance_texts(store: NetworkStore, kn_id: str) -> list[tuple[str, str, dict[str, list[str]]]]:
    """``(object type id, name, {property: [texts]})`` for every instance of ``kn_id`` (by type and id):
    string properties and the strings of list properties, blanks dropped. Raises
    :class:`kgrag.errors.NetworkNotFound` for an unknown network."""
    store.get_network(kn_id)
    ti = t.instances
    stmt = (select(ti.c.object_type_id, ti.c.name, ti.c.properties)
            .where(ti.c.kn_id == kn_id).order_by(ti.c.object_type_id, ti.c.id))
    out = []
    with store.engine.connect() as conn:
        for row in conn.execute(stmt):
            out.append((row.object_type_id, row.name, property_strings(row.properties)))
    return out


def network_texts(store: NetworkStore, kn_id: str) -> list[str]:
    """Every text of ``kn_id``'s instances — names and every string / list-of-string property — each distinct
    text once, in store order (type, id, property)."""
    return distinct_texts((name, props) for _type, name, props in instance_texts(store, kn_id))
