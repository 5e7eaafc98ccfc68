"""Dataset readers and the demo KG behind one small API.

``load_kg(name)`` returns a :class:`KGDataset` for ``"metaqa"``, ``"medical"`` or ``"demo"`` (seed 0);
``load_questions(name)`` returns the question records of ``"metaqa"`` (the dev questions of all three hop
files; split them with :func:`kgrag.data.metaqa.split_train_validation`), ``"demo"``, ``"webqsp"`` or ``"cwq"``.
Medical questions are paired with Cypher queries rather than gold entities, so ``load_questions("medical")``
raises :class:`KgragError` pointing at :func:`kgrag.data.medical.read_cypher_questions`.

Data is read from ``data_dir`` or, when None, from ``get_settings().data_dir`` (``KGRAG_DATA_DIR``); a missing
folder or file raises :class:`DataNotFoundError` naming the path and the setting. The demo needs no files.
"""

from __future__ import annotations

from pathlib import Path

from kgrag.config import get_settings
from kgrag.data.demo import demo_kg, demo_questions
from kgrag.data.download import missing_data_error
from kgrag.data.freebase import cwq_to_kgquestions, read_cwq, read_webqsp, webqsp_to_kgquestions
from kgrag.data.medical import medical_kg, read_diseases
from kgrag.data.metaqa import read_kb, read_questions
from kgrag.data.records import KGDataset, KGQuestion, LineIssue, ReadResult, Triple
from kgrag.errors import KgragError

__all__ = [
    "KG_NAMES",
    "QUESTION_NAMES",
    "KGDataset",
    "KGQuestion",
    "LineIssue",
    "ReadResult",
    "Triple",
    "load_kg",
    "load_questions",
]

KG_NAMES = ("metaqa", "medical", "demo")
QUESTION_NAMES = ("metaqa", "demo", "webqsp", "cwq")

# dataset -> path under the data directory
_KG_PATHS = {"metaqa": "metaqa/kb.txt", "medical": "medical/diseases"}
_QUESTION_PATHS = {
    "metaqa": "metaqa",
    "webqsp": "freebase/webqsp_100.json",
    "cwq": "freebase/cwq_300.json",
}


def _data_root(data_dir: str | Path | None, dataset: str) -> Path:
    root = Path(data_dir).expanduser().resolve() if data_dir is not None else get_settings().data_dir
    if not root.is_dir():
        raise missing_data_error(root, _source(dataset), "data directory")
    return root


def _source(dataset: str) -> str:
    return "freebase" if dataset in ("webqsp", "cwq") else dataset


def _require(path: Path, dataset: str, what: str) -> Path:
    if not path.exists():
        raise missing_data_error(path, _source(dataset), what)
    return path


def load_kg(name: str, data_dir: str | Path | None = None) -> KGDataset:
    """The triple graph ``name`` (``metaqa`` | ``medical`` | ``demo``); malformed input is in ``.issues``."""
    if name == "demo":
        return demo_kg()
    if name not in _KG_PATHS:
        raise KgragError(f"unknown knowledge graph {name!r}; choose one of: {', '.join(KG_NAMES)}.")
    path = _require(_data_root(data_dir, name) / _KG_PATHS[name], name, f"{name} KG data")
    if name == "metaqa":
        return read_kb(path)
    diseases = read_diseases(path)
    kg = medical_kg(diseases.records)
    kg.issues.extend(diseases.issues)
    return kg


def load_questions(name: str, data_dir: str | Path | None = None) -> ReadResult[KGQuestion]:
    """Questions of ``name`` (``metaqa`` dev | ``demo`` | ``webqsp`` | ``cwq``) as :class:`KGQuestion` records."""
    if name == "demo":
        return ReadResult(records=demo_questions(load_kg("demo", data_dir)))
    if name == "medical":
        raise KgragError(
            "medical questions are paired with Cypher queries, not gold entities: read them with "
            "kgrag.data.medical.read_cypher_questions(<data_dir>/medical/questions_cypher_train.json)."
        )
    if name not in _QUESTION_PATHS:
        raise KgragError(f"unknown question set {name!r}; choose one of: {', '.join(QUESTION_NAMES)}.")
    path = _require(_data_root(data_dir, name) / _QUESTION_PATHS[name], name, f"{name} questions")
    if name == "metaqa":
        return read_questions(path)
    if name == "webqsp":
        webqsp = read_webqsp(path)
        return ReadResult(records=webqsp_to_kgquestions(webqsp.records), issues=webqsp.issues)
    cwq = read_cwq(path)
    return ReadResult(records=cwq_to_kgquestions(cwq.records), issues=cwq.issues)
