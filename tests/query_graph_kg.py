"""A small readable-predicate Turtle graph of scientists, prizes, universities, cities and countries (rdfs:label
names, rdf:type classes, xsd:date / gYear / dateTime values, a CVT), imported the way ``kgrag prepare --triples``
imports a user's file and loaded into an embedded pyoxigraph store: the graph the query-graph tests plan on.

    client = scientists_client(tmp_path)   # a KGClient over the store
"""

from __future__ import annotations

from pathlib import Path

from kgrag.data.triples import read_triple_files
from kgrag.graph.imported import imported_csr
from kgrag.graph.oxigraph_store import OxigraphStore, build_store
from kgrag.graph.rdf import write_ntriples
from kgrag.tools.client import KGClient

NAMESPACE = "http://example.org/kgrag/scientists/ns/"

SCIENTISTS_TTL = """@prefix ex: <http://example.org/sci/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:Person rdfs:label "Person" . ex:City rdfs:label "City" . ex:Country rdfs:label "Country" .
ex:Prize rdfs:label "Prize" . ex:University rdfs:label "University" .
ex:curie a ex:Person ; rdfs:label "Marie Curie" ; ex:bornIn ex:warsaw ; ex:birthDate "1867-11-07"^^xsd:date ;
  ex:won ex:nobelPhysics, ex:nobelChemistry, ex:davyMedal ; ex:educatedAt ex:sorbonne ; ex:spouse ex:pierre .
ex:pierre a ex:Person ; rdfs:label "Pierre Curie" ; ex:bornIn ex:paris ; ex:birthDate "1859-05-15"^^xsd:date ;
  ex:won ex:nobelPhysics, ex:davyMedal ; ex:educatedAt ex:sorbonne .
ex:einstein a ex:Person ; rdfs:label "Albert Einstein" ; ex:bornIn ex:ulm ; ex:birthDate "1879"^^xsd:gYear ;
  ex:won ex:nobelPhysics ; ex:educatedAt ex:eth .
ex:bohr a ex:Person ; rdfs:label "Niels Bohr" ; ex:bornIn ex:copenhagen ;
  ex:birthDate "1885-10-07T00:00:00"^^xsd:dateTime ; ex:won ex:nobelPhysics ; ex:educatedAt ex:copenhagenUni .
ex:feynman a ex:Person ; rdfs:label "Richard Feynman" ; ex:bornIn ex:nyc ; ex:birthDate "1918-05-11"^^xsd:date ;
  ex:won ex:nobelPhysics ; ex:educatedAt ex:mit .
ex:hodgkin a ex:Person ; rdfs:label "Dorothy Hodgkin" ; ex:bornIn ex:cairo ; ex:birthDate "1910"^^xsd:gYear ;
  ex:won ex:nobelChemistry .
ex:warsaw a ex:City ; rdfs:label "Warsaw" ; ex:locatedIn ex:poland ; ex:population 1860000 .
ex:paris a ex:City ; rdfs:label "Paris" ; ex:locatedIn ex:france ; ex:population 2100000 .
ex:ulm a ex:City ; rdfs:label "Ulm" ; ex:locatedIn ex:germany ; ex:population 126000 .
ex:copenhagen a ex:City ; rdfs:label "Copenhagen" ; ex:locatedIn ex:denmark ; ex:population 660000 .
ex:nyc a ex:City ; rdfs:label "New York City" ; ex:locatedIn ex:usa ; ex:population 8300000 .
ex:cairo a ex:City ; rdfs:label "Cairo" ; ex:locatedIn ex:egypt ; ex:population 9500000 .
ex:poland a ex:Country ; rdfs:label "Poland" . ex:france a ex:Country ; rdfs:label "France" .
ex:germany a ex:Country ; rdfs:label "Germany" . ex:denmark a ex:Country ; rdfs:label "Denmark" .
ex:usa a ex:Country ; rdfs:label "United States" . ex:egypt a ex:Country ; rdfs:label "Egypt" .
ex:nobelPhysics a ex:Prize ; rdfs:label "Nobel Prize in Physics" ; ex:firstAwarded "1901"^^xsd:gYear .
ex:nobelChemistry a ex:Prize ; rdfs:label "Nobel Prize in Chemistry" ; ex:firstAwarded "1901"^^xsd:gYear .
ex:davyMedal a ex:Prize ; rdfs:label "Davy Medal" ; ex:firstAwarded "1877"^^xsd:gYear .
ex:sorbonne a ex:University ; rdfs:label "Sorbonne" ; ex:locatedIn ex:paris ; ex:founded "1257"^^xsd:gYear .
ex:eth a ex:University ; rdfs:label "ETH Zurich" ; ex:founded "1855"^^xsd:gYear .
ex:copenhagenUni a ex:University ; rdfs:label "University of Copenhagen" ; ex:locatedIn ex:copenhagen ;
  ex:founded "1479"^^xsd:gYear .
ex:mit a ex:University ; rdfs:label "Massachusetts Institute of Technology" ; ex:locatedIn ex:nyc ;
  ex:founded "1861"^^xsd:gYear .
ex:curie ex:position ex:pos1 . ex:pos1 ex:employer ex:sorbonne ; ex:startYear "1906"^^xsd:gYear .
"""


def scientists_client(folder: Path) -> KGClient:
    """The graph imported, exported as N-Triples and loaded into a read-only store under ``folder``."""
    source = folder / "scientists.ttl"
    source.write_text(SCIENTISTS_TTL, encoding="utf-8")
    arrays = read_triple_files([source], lang="en")
    graph = imported_csr(arrays, "scientists", NAMESPACE, "en")
    ntriples = folder / "graph.nt"
    write_ntriples(graph, None, ntriples, name_lang="en", literal_types=arrays.literal_types)
    build_store(ntriples, folder / "store")
    return KGClient(OxigraphStore(folder / "store", read_only=True), base=NAMESPACE)
