"""A dataset is a value: :class:`DatasetSpec` says where a triple graph and its questions come from and how to
read them; every stage (prep, the KG tools, the agent, H-RAG) reads the spec, never ``if name == …``.

    DatasetSpec(name="mykg", reader="triples", triples=["/data/kg.nt.gz"], questions=["/data/q.jsonl"])

Readers: ``metaqa`` / ``demo`` / ``medical`` (the built-in datasets, :data:`BUILTIN_SPECS`), ``triples`` (a user's
own N-Triples / N-Quads / Turtle / TSV files, imported into the work dir, :mod:`kgrag.data.triples`) and
``endpoint`` (a graph that lives on a SPARQL server and is not copied). An imported graph is re-minted into its
own namespace (:func:`imported_namespace`); an endpoint's ``namespace`` is the one its IRIs use (Freebase's by
default). Paths are absolute; the built-in ones are relative to the data dir.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kgrag.data.freebase import FREEBASE_NS
from kgrag.data.medical import MEDICAL_NS
from kgrag.data.metaqa import METAQA_NS

__all__ = [
    "BUILTIN_SPECS",
    "NAME_PATTERN",
    "RESERVED_NAMES",
    "DatasetSpec",
    "imported_namespace",
]

#: a dataset name: a folder under the work dir, a CLI value, part of checkpoint file names
NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,39}$"
#: folders of the work dir that are not datasets
RESERVED_NAMES = frozenset({"cache", "checkpoints", "artifacts", "models", "datasets", "threads", "staging",
                            "prefect", "logs", "kn"})

_IRI = re.compile(r'^(?:https?://|urn:)[^\s<>"{}|\\^`]{1,1990}\Z')

Reader = Literal["metaqa", "demo", "medical", "triples", "endpoint"]


def imported_namespace(name: str) -> str:
    """The namespace an imported graph is re-minted into (its entities, relations and the name predicate)."""
    return f"http://example.org/kgrag/{name}/ns/"


class DatasetSpec(BaseModel):
    """Sources, formats and conventions of one triple graph (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, description="the dataset's name (a folder of the work dir)")
    reader: Reader
    triples: tuple[str, ...] = Field(default=(), max_length=1000, description="triple files, absolute paths")
    questions: tuple[str, ...] = Field(default=(), max_length=1000, description="question files, absolute paths")
    lang: str = Field("en", pattern=r"^[a-zA-Z]{2,8}(-[a-zA-Z0-9]{1,8})*$", description="preferred name language")
    namespace: str = Field("", max_length=500, description="IRI base of entities and relations in the store")
    endpoint: str | None = Field(None, max_length=2000, description="SPARQL endpoint (reader endpoint)")
    graph: str | None = Field(None, max_length=2000, description="named graph on the endpoint")
    max_bad_lines: int = Field(1000, ge=0, le=10_000_000, description="malformed lines skipped before the "
                               "import stops")
    validation_fraction: float = Field(0.1, ge=0.0, lt=1.0, description="questions without a split → validation")
    seed: int = Field(0, ge=0)
    store: bool = Field(True, description="load the embedded SPARQL store the KG tools query (off: H-RAG reads "
                        "only the mapped graph — a graph too large to hold twice on a laptop)")
    alias_predicates: tuple[str, ...] = Field(default=(), max_length=100, description="IRIs of the graph's own "
                                              "other-name predicates, read as other names of their subject (beside "
                                              "skos:altLabel, schema:alternateName, common.topic.alias)")

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name in RESERVED_NAMES:
            raise ValueError(f"{name!r} is a folder of the work dir; choose another dataset name")
        return name

    @field_validator("alias_predicates")
    @classmethod
    def _iris(cls, predicates: tuple[str, ...]) -> tuple[str, ...]:
        for iri in predicates:
            if not _IRI.match(iri):
                raise ValueError(f"{iri!r} is not an absolute IRI (http://…, https://… or urn:…)")
        return predicates

    @property
    def builtin(self) -> bool:
        """One of :data:`BUILTIN_SPECS` (the registry refuses their names for imports)."""
        return BUILTIN_SPECS.get(self.name) == self

    @property
    def local(self) -> bool:
        """True when the graph is imported into the work dir (CSR graph + embedded store)."""
        return self.reader != "endpoint"

    @property
    def has_questions(self) -> bool:
        """Medical questions are Cypher-paired: they belong to the knowledge-network side."""
        return self.reader != "medical"

    def fingerprint(self) -> str:
        """A short hash of the spec (the sources' contents are fingerprinted by the prep steps)."""
        payload = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    def describe(self) -> str:
        """One line: where the graph comes from."""
        if self.reader == "endpoint":
            where = self.endpoint or "KGRAG_SPARQL_ENDPOINT"
            return f"SPARQL endpoint {where}" + (f" (graph {self.graph})" if self.graph else "")
        if self.reader == "triples":
            return ", ".join(_short(p) for p in self.triples)
        return f"built-in ({self.reader})"


def _short(path: str) -> str:
    return re.sub(r"^.*/", "…/", path) if len(path) > 60 else path


BUILTIN_SPECS: dict[str, DatasetSpec] = {
    "metaqa": DatasetSpec(name="metaqa", reader="metaqa", triples=("metaqa/kb.txt",), questions=("metaqa",),
                          namespace=METAQA_NS),
    "demo": DatasetSpec(name="demo", reader="demo", namespace=FREEBASE_NS),
    "medical": DatasetSpec(name="medical", reader="medical", triples=("medical/diseases",), lang="zh",
                           namespace=MEDICAL_NS),
    # Freebase on a SPARQL server named by KGRAG_SPARQL_ENDPOINT (no local copy)
    "freebase": DatasetSpec(name="freebase", reader="endpoint", namespace=FREEBASE_NS),
}
