"""Parse the CE-Prompt Cypher subset into a typed question target (which schema element a question asks for).

Accepted (any variable names, either quote style, any spacing, an optional ``AS alias``)::

    MATCH (d:Disease {name: 'X'}) RETURN d.cure_way                          -> prop:cure_way
    MATCH (m:Disease) WHERE m.name = 'X' RETURN m.desc                        -> prop:desc
    MATCH (m:Disease {name:'X'})-[:has_symptom]->(n:Symptom) RETURN n.name    -> rel:has_symptom
    MATCH (v:Disease {name:'X'})-[:common_drug|:recommand_drug]->(d:Drug) RETURN d.name  -> rel:common_drug
    MATCH (m:Disease {name:'X'})-[:acompany_with]-(n:Disease) RETURN n.name   -> rel:acompany_with
    MATCH (m:Disease)-[r:has_symptom]->(n:Symptom) WHERE n.name = 'X' RETURN m.name  -> rel_in:has_symptom
    MATCH (m:Disease {name:'X'})-[:belongs_to]->(n:Department) RETURN m.prevent      -> prop:prevent

An undirected relation is oriented by the schema's node types (a Symptom topic of ``has_symptom`` is inbound);
between two Diseases (``acompany_with``) the named node is the source. The last form (a property of the named
Disease behind a relation pattern) asks for the property: the pattern only filters rows.

Everything else gives ``None`` and a short reason the caller counts (:data:`SKIP_REASONS`): whole nodes
(``RETURN m``), several return items, the property of the *other* node (``-[:acompany_with]->(r) RETURN
r.cause``), unknown or misspelt property names, untyped or unknown relations, several named nodes, multi-hop
patterns, ``CONTAINS``/``OR``/``AND`` conditions, aggregates.

Run: ``python -m kgrag.agent.training.cypher`` parses ``<data_dir>/medical/questions_cypher_train.json`` and prints the
label and skip-reason counts.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from kgrag.agent.kn.intent import RELATION_SCHEMA
from kgrag.network.loaders.medical import DISEASE_PROPERTIES as NETWORK_PROPERTIES

__all__ = ["PROPERTY_TYPES", "RELATION_SCHEMA", "SKIP_REASONS", "CypherTarget",
           "ParseResult", "parse_cypher", "label_counts"]

#: Disease properties the Cypher subset may ask for -> value type: the medical network's, less ``name`` (the key)
#: and ``category`` (the network's copy of the belongs_to departments)
PROPERTY_TYPES: dict[str, str] = {name: spec[1] for name, spec in NETWORK_PROPERTIES.items()
                                  if name not in ("name", "category")}

_RELATION_ALIASES = {"recommand_drug": "common_drug"}  # -[:common_drug|:recommand_drug]-> is one relation

SKIP_REASONS = (
    "not a single MATCH … RETURN", "several MATCH clauses", "unparsed pattern", "multi-hop pattern",
    "unsupported node properties", "unsupported WHERE", "no named node", "several named nodes",
    "untyped relation", "variable-length relation", "unknown relation type", "several relation types",
    "labels do not match the relation", "aggregate in RETURN", "multiple returns", "returns a whole node",
    "returns the topic's name", "property of a related node", "property of a non-Disease node",
    "unknown property", "returns a relation variable", "unbound return variable",
)


@dataclass(frozen=True)
class CypherTarget:
    """What a question asks for: ``element`` (a property or relation type) of the named ``topic``."""

    topic: str
    topic_type: str
    kind: Literal["property", "relation"]
    element: str
    direction: Literal["out", "in"] = "out"
    answer_type: str = ""  # the answers' node type (relation) or the property's value type

    @property
    def label(self) -> str:
        """``prop:<property>``, ``rel:<relation>`` or ``rel_in:<relation>`` — the ranker's class."""
        if self.kind == "property":
            return f"prop:{self.element}"
        return f"rel:{self.element}" if self.direction == "out" else f"rel_in:{self.element}"


@dataclass(frozen=True)
class ParseResult:
    target: CypherTarget | None
    reason: str = ""  # why target is None (one of SKIP_REASONS)


@dataclass
class _Node:
    var: str
    label: str
    name: str | None


_STRING = re.compile(r"'([^'\\]*(?:\\.[^'\\]*)*)'|\"([^\"\\]*(?:\\.[^\"\\]*)*)\"")
_CLAUSES = re.compile(r"^\s*MATCH\b(?P<pattern>.*?)(?:\bWHERE\b(?P<where>.*?))?\bRETURN\b(?P<ret>.*?);?\s*$",
                      re.I | re.S)
_NODE = re.compile(r"\(\s*(?P<var>\w*)\s*(?::\s*(?P<label>\w+))?\s*(?:\{(?P<props>[^}]*)\})?\s*\)")
_REL = re.compile(r"(?P<left><)?-\s*(?:\[\s*(?P<var>\w*)\s*(?::(?P<types>[^\]]*))?\])?\s*-(?P<right>>)?")
_NAME_PROP = re.compile(r"^\s*name\s*:\s*\$(\d+)\s*$")
_NAME_EQ = re.compile(r"^\s*(\w+)\s*\.\s*name\s*=\s*\$(\d+)\s*$")
_RETURN_ITEM = re.compile(r"^\s*(?:DISTINCT\s+)?(?P<var>\w+)(?:\s*\.\s*(?P<prop>\w+))?(?:\s+AS\s+\S+)?\s*$",
                          re.I)


def _skip(reason: str) -> ParseResult:
    return ParseResult(None, reason)


def _parse_pattern(text: str) -> tuple[list[_Node], list[tuple[str, str, str]]] | str:
    """Nodes and relations ``(arrow, types, var)`` of a linear pattern; a skip reason when it is not one."""
    nodes: list[_Node] = []
    rels: list[tuple[str, str, str]] = []
    pos, text = 0, text.strip()
    while True:
        m = _NODE.match(text, pos)
        if not m:
            return "unparsed pattern"
        name = None
        if m.group("props") is not None and m.group("props").strip():
            pm = _NAME_PROP.match(m.group("props"))
            if not pm:
                return "unsupported node properties"
            name = pm.group(1)
        nodes.append(_Node(m.group("var"), m.group("label") or "", name))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return nodes, rels
        r = _REL.match(text, pos)
        if not r:
            return "unparsed pattern"
        arrow = ("<" if r.group("left") else "") + "-" + (">" if r.group("right") else "")
        rels.append((arrow, r.group("types") or "", r.group("var") or ""))
        pos = r.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1


def _relation_type(types: str) -> str:
    """The single relation of ``has_symptom`` / ``common_drug|:recommand_drug``; a skip reason otherwise."""
    if not types.strip():
        return "untyped relation"
    if "*" in types:
        return "variable-length relation"
    names = {t.strip().lstrip(":").strip() for t in types.split("|")}
    names = {_RELATION_ALIASES.get(n, n) for n in names if n}
    if len(names) != 1:
        return "several relation types" if names else "untyped relation"
    (name,) = names
    return name if name in RELATION_SCHEMA else "unknown relation type"


def parse_cypher(cypher: str) -> ParseResult:
    """The :class:`CypherTarget` of one CE-Prompt Cypher query, or ``None`` with the reason it is skipped."""
    literals: list[str] = []

    def _lit(m: re.Match) -> str:
        literals.append((m.group(1) if m.group(1) is not None else m.group(2)).strip())
        return f"${len(literals) - 1}"

    text = _STRING.sub(_lit, cypher)
    if len(re.findall(r"\bMATCH\b", text, re.I)) > 1:
        return _skip("several MATCH clauses")
    clauses = _CLAUSES.match(text)
    if not clauses:
        return _skip("not a single MATCH … RETURN")
    parsed = _parse_pattern(clauses.group("pattern"))
    if isinstance(parsed, str):
        return _skip(parsed)
    nodes, rels = parsed
    if len(nodes) > 2:
        return _skip("multi-hop pattern")
    by_var = {n.var: n for n in nodes if n.var}
    where = clauses.group("where")
    if where is not None:
        wm = _NAME_EQ.match(where)
        if not wm or wm.group(1) not in by_var:
            return _skip("unsupported WHERE")
        node = by_var[wm.group(1)]
        if node.name is not None:
            return _skip("several named nodes")
        node.name = wm.group(2)
    named = [n for n in nodes if n.name is not None]
    if not named:
        return _skip("no named node")
    if len(named) > 1:
        return _skip("several named nodes")
    topic = named[0]
    ret = clauses.group("ret")
    if "(" in ret:
        return _skip("aggregate in RETURN")
    items = [i for i in ret.split(",")]
    if len(items) != 1:
        return _skip("multiple returns")
    im = _RETURN_ITEM.match(items[0])
    if not im:
        return _skip("aggregate in RETURN")
    var, prop = im.group("var"), im.group("prop")
    if var not in by_var:
        relation_vars = {r[2] for r in rels}
        return _skip("returns a relation variable" if var in relation_vars else "unbound return variable")
    if prop is None:
        return _skip("returns a whole node")
    returned = by_var[var]
    topic_name = literals[int(topic.name)]  # type: ignore[arg-type]

    def property_target() -> ParseResult:
        if prop == "name":
            return _skip("returns the topic's name")
        if topic.label != "Disease":
            return _skip("property of a non-Disease node")
        if prop not in PROPERTY_TYPES:
            return _skip("unknown property")
        return ParseResult(CypherTarget(topic_name, "Disease", "property", prop, "out", PROPERTY_TYPES[prop]))

    if not rels:
        return property_target()
    (arrow, types, _), (left, right) = rels[0], nodes
    rel = _relation_type(types)
    if rel not in RELATION_SCHEMA:
        return _skip(rel)
    source_type, target_type = RELATION_SCHEMA[rel]
    if arrow == "->":
        source, target = left, right
    elif arrow == "<-":
        source, target = right, left
    else:  # undirected (or the invalid "<-…->"): orient by the node types, else the named node is the source
        if source_type != target_type and (left.label == target_type or right.label == source_type):
            source, target = right, left
        elif source_type != target_type or topic is left:
            source, target = left, right
        else:
            source, target = right, left
    if (source.label and source.label != source_type) or (target.label and target.label != target_type):
        return _skip("labels do not match the relation")
    if returned is topic:
        return property_target()
    if prop != "name":
        return _skip("property of a related node")
    direction: Literal["out", "in"] = "out" if topic is source else "in"
    answer_type = target_type if direction == "out" else source_type
    topic_type = source_type if direction == "out" else target_type
    return ParseResult(CypherTarget(topic_name, topic_type, "relation", rel, direction, answer_type))


def label_counts(cyphers: list[str]) -> tuple[Counter, Counter]:
    """``(label counts, skip-reason counts)`` of a list of Cypher queries."""
    labels: Counter = Counter()
    skips: Counter = Counter()
    for c in cyphers:
        r = parse_cypher(c)
        if r.target is None:
            skips[r.reason] += 1
        else:
            labels[r.target.label] += 1
    return labels, skips


if __name__ == "__main__":
    import json

    from kgrag.config import get_settings

    path = get_settings().data_dir / "medical" / "questions_cypher_train.json"
    labels, skips = label_counts([row["cypher"] for row in json.loads(path.read_text(encoding="utf-8"))])
    print(json.dumps({"labels": dict(labels.most_common()), "skipped": dict(skips.most_common())},
                     ensure_ascii=False, indent=1))
