"""A generated large-schema network (deterministic for a seed) for coarse recall (spec kn-search, the
kn_search API specification of concept and instance recall, §3.2.2).

Object types are ``<Qualifier> <Noun>`` pairs drawn from a small business/science/civic vocabulary
(``Hospital Patient``, ``Freight Invoice`` …) with a comment naming the domain; relation types connect two
object types with a verb (``Hospital Patient -- treated by --> Clinic Physician``), named by the verb and
commented with the whole phrase, so type search has something meaningful to rank. Defaults: 1,200 object types
and 6,000 relation types (≥ 5,000, the spec's coarse-recall threshold), one instance per object type and one
link per relation type whose end types both have instances (all do), so instance queries work too.
"""

from __future__ import annotations

import itertools
import random

from kgrag.network.loaders import NetworkData
from kgrag.network.schema.model import (
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
)

__all__ = ["synthetic_network"]

_DOMAINS: dict[str, tuple[str, ...]] = {
    "healthcare": (
        "Hospital",
        "Clinic",
        "Pharmacy",
        "Laboratory",
        "Nursing",
        "Surgical",
        "Dental",
        "Pediatric",
    ),
    "logistics": ("Freight", "Warehouse", "Shipping", "Courier", "Customs", "Fleet", "Port", "Rail"),
    "finance": ("Banking", "Insurance", "Credit", "Payroll", "Tax", "Investment", "Loan", "Treasury"),
    "education": ("School", "University", "Course", "Library", "Exam", "Campus", "Research", "Scholarship"),
    "retail": ("Store", "Online", "Loyalty", "Catalog", "Checkout", "Promotion", "Supplier", "Inventory"),
    "energy": ("Solar", "Wind", "Grid", "Battery", "Pipeline", "Refinery", "Nuclear", "Hydro"),
    "media": ("Film", "Music", "News", "Podcast", "Broadcast", "Streaming", "Publishing", "Gaming"),
    "government": ("Municipal", "Court", "Election", "Police", "Census", "Permit", "Parliament", "Embassy"),
    "agriculture": ("Farm", "Crop", "Livestock", "Irrigation", "Orchard", "Dairy", "Seed", "Harvest"),
    "technology": ("Cloud", "Network", "Software", "Database", "Security", "Device", "Mobile", "Data"),
    "travel": ("Airline", "Hotel", "Tour", "Airport", "Cruise", "Rental", "Visa", "Booking"),
    "manufacturing": (
        "Factory",
        "Assembly",
        "Machine",
        "Quality",
        "Tooling",
        "Foundry",
        "Textile",
        "Chemical",
    ),
}
_NOUNS = (
    "Patient", "Physician", "Invoice", "Order", "Account", "Contract", "Employee", "Customer", "Vehicle",
    "Shipment", "Record", "Report", "Schedule", "Policy", "Asset", "Project", "Event", "Permit", "Product",
    "Facility", "Sensor", "Ticket", "Application", "License", "Batch", "Route", "Member", "Budget", "Claim",
    "Device", "Site", "Team", "Audit", "Course", "Sample", "Station",
)  # fmt: skip
_VERBS = (
    "owns", "manages", "employs", "supplies", "treats", "ships to", "bills", "insures", "audits", "schedules",
    "located in", "part of", "approves", "reports to", "produces", "monitors", "contains", "references",
    "assigned to", "funded by", "inspects", "delivers", "registers", "hosts", "requires", "replaces",
    "sponsors", "transports", "stores", "licenses", "operated by", "belongs to", "depends on", "serves",
    "trains", "certifies", "purchases", "sells to", "maintains", "reviews",
)  # fmt: skip


def synthetic_network(
    kn_id: str = "synthetic", n_object_types: int = 1200, n_relation_types: int = 6000, seed: int = 0
) -> NetworkData:
    """Generate the network (see the module docstring); identical output for identical arguments."""
    rng = random.Random(seed)
    combos = [
        (domain, qual, noun)
        for domain, quals in _DOMAINS.items()
        for qual, noun in itertools.product(quals, _NOUNS)
    ]
    if n_object_types > len(combos):
        raise ValueError(f"at most {len(combos)} object types can be generated, asked for {n_object_types}")
    chosen = rng.sample(combos, n_object_types)
    object_types: list[ObjectType] = []
    for i, (domain, qual, noun) in enumerate(chosen):
        object_types.append(
            ObjectType(
                id=f"ot_{i:04d}_{qual.lower()}_{noun.lower()}",
                name=f"{qual} {noun}",
                comment=f"A {noun.lower()} of the {qual.lower()} {domain} domain",
                tags=[domain],
                data_properties=[
                    DataProperty(
                        name="name",
                        type="string",
                        comment=f"{qual} {noun} name",
                        condition_operations=["match", "==", "prefix", "contain"],
                    ),
                    DataProperty(name="code", type="string", condition_operations=["==", "prefix"]),
                    DataProperty(name="score", type="float", condition_operations=[">", "<", "range"]),
                ],
            )
        )
    relation_types: list[RelationType] = []
    seen: set[tuple[int, int, str]] = set()
    while len(relation_types) < n_relation_types:
        a, b = rng.randrange(n_object_types), rng.randrange(n_object_types)
        verb = rng.choice(_VERBS)
        if (a, b, verb) in seen:
            continue
        seen.add((a, b, verb))
        src, tgt = object_types[a], object_types[b]
        relation_types.append(
            RelationType(
                id=f"rt_{len(relation_types):05d}_{verb.replace(' ', '_')}",
                name=verb,
                comment=f"{src.name} {verb} {tgt.name}",
                source_object_type_id=src.id,
                target_object_type_id=tgt.id,
            )
        )
    network = KnowledgeNetwork(
        kn_id=kn_id,
        name="Synthetic large-schema network",
        comment=f"{n_object_types} object types, {n_relation_types} relation types (seed {seed})",
        object_types=object_types,
        relation_types=relation_types,
    )
    instances = [
        Instance(
            object_type_id=ot.id,
            id=f"{ot.id}:1",
            properties={"name": f"{ot.name} #1", "code": f"C{i:05d}", "score": round(rng.random(), 3)},
        )
        for i, ot in enumerate(object_types)
    ]
    links = [
        Link(
            relation_type_id=rt.id,
            source_id=f"{rt.source_object_type_id}:1",
            target_id=f"{rt.target_object_type_id}:1",
        )
        for rt in relation_types
    ]
    return network, instances, links
