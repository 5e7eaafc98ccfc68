"""Dataset readers and the demo KG behind one small API, keyed by a :class:`~kgrag.data.spec.DatasetSpec`'s
``reader`` (one table: :data:`kgrag.data.spec.BUILTIN_SPECS` and the registry name the datasets, never this module).

    load_kg(BUILTIN_SPECS["metaqa"])        # KGDataset of the MetaQA KB
    load_questions(dataset_spec("mykg", settings))

``load_kg(spec)`` returns a :class:`KGDataset` for a spec read by ``metaqa``, ``medical`` or ``demo`` (seed 0; an
imported or endpoint graph is read by :mod:`kgrag.data.triples` / its SPARQL server instead).
``load_questions(spec)`` returns its question records: MetaQA's dev questions of all three hop files (split them
with :func:`kgrag.data.metaqa.split_train_validation`), the demo's, or the files a spec names (any format of
:mod:`kgrag.data.question_files`, e.g. the Freebase samples ``freebase/webqsp_100.json`` on the ``freebase``
spec). Medical questions are paired with Cypher queries rather than gold entities, so the ``medical`` reader
raises :class:`KgragError` pointing at :func:`kgrag.data.medical.read_cypher_questions`.

A spec's relative paths are under ``data_dir`` or, when None, ``get_settings().data_dir`` (``KGRAG_DATA_DIR``); a
missing folder or file raises :class:`DataNotFoundError` naming the path and the setting. The demo needs no files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kgrag.config import get_settings
from kgrag.data.demo import demo_kg, demo_questions
from kgrag.data.download import missing_data_error
from kgrag.data.medical import medical_kg, read_diseases
from kgrag.data.metaqa import read_kb, read_questions
from kgrag.data.question_files import read_question_files
from kgrag.data.records import KGDataset, KGQuestion, LineIssue, ReadResult, Triple
from kgrag.data.spec import DatasetSpec
from kgrag.errors import KgragError

__all__ = [
    "KGDataset",
    "KGQuestion",
    "LineIssue",
    "ReadResult",
    "Triple",
    "load_kg",
    "load_questions",
]

DataDir = str | Path | None


def _source(spec: DatasetSpec, relative: str, data_dir: DataDir, what: str) -> Path:
    """``relative`` under the data dir, where a missing one raises naming the setting; an absolute path (a user's
    file) as it is, its reader naming it when missing."""
    if Path(relative).is_absolute():
        return Path(relative)
    root = Path(data_dir).expanduser().resolve() if data_dir is not None else get_settings().data_dir
    if not root.is_dir():
        raise missing_data_error(root, spec.name, "data directory")
    path = root / relative
    if not path.exists():
        raise missing_data_error(path, spec.name, what)
    return path


def _metaqa_kg(spec: DatasetSpec, data_dir: DataDir) -> KGDataset:
    return read_kb(_source(spec, spec.triples[0], data_dir, f"{spec.name} KG data"))


def _medical_kg(spec: DatasetSpec, data_dir: DataDir) -> KGDataset:
    diseases = read_diseases(_source(spec, spec.triples[0], data_dir, f"{spec.name} KG data"))
    kg = medical_kg(diseases.records)
    kg.issues.extend(diseases.issues)
    return kg


#: reader → the KGDataset it builds
_KG_READERS: dict[str, Callable[[DatasetSpec, DataDir], KGDataset]] = {
    "metaqa": _metaqa_kg,
    "medical": _medical_kg,
    "demo": lambda spec, data_dir: demo_kg(),
}


def load_kg(spec: DatasetSpec, data_dir: DataDir = None) -> KGDataset:
    """The triple graph of ``spec`` (reader ``metaqa`` | ``medical`` | ``demo``); malformed input is in ``.issues``."""
    reader = _KG_READERS.get(spec.reader)
    if reader is None:
        raise KgragError(f"no in-memory reader for {spec.name!r} (reader {spec.reader}); choose one of: "
                         f"{', '.join(_KG_READERS)}.")
    return reader(spec, data_dir)


def _metaqa_questions(spec: DatasetSpec, data_dir: DataDir) -> ReadResult[KGQuestion]:
    return read_questions(_source(spec, spec.questions[0], data_dir, f"{spec.name} questions"))


def _demo_questions(spec: DatasetSpec, data_dir: DataDir) -> ReadResult[KGQuestion]:
    return ReadResult(records=demo_questions(load_kg(spec, data_dir)))


def _medical_questions(spec: DatasetSpec, data_dir: DataDir) -> ReadResult[KGQuestion]:
    raise KgragError(
        "medical questions are paired with Cypher queries, not gold entities: read them with "
        "kgrag.data.medical.read_cypher_questions(<data_dir>/medical/questions_cypher_train.json)."
    )


def _question_files(spec: DatasetSpec, data_dir: DataDir) -> ReadResult[KGQuestion]:
    if not spec.questions:
        return ReadResult(records=[])
    paths = [_source(spec, p, data_dir, f"{spec.name} questions") for p in spec.questions]
    return read_question_files(paths, spec.name)


#: reader → its questions
_QUESTION_READERS: dict[str, Callable[[DatasetSpec, DataDir], ReadResult[KGQuestion]]] = {
    "metaqa": _metaqa_questions,
    "demo": _demo_questions,
    "medical": _medical_questions,
    "triples": _question_files,
    "endpoint": _question_files,
}


def load_questions(spec: DatasetSpec, data_dir: DataDir = None) -> ReadResult[KGQuestion]:
    """The questions of ``spec`` as :class:`KGQuestion` records (see the module docstring)."""
    return _QUESTION_READERS[spec.reader](spec, data_dir)
