"""Where each dataset comes from, and a downloader that fetches it into a data directory.

``DATASETS`` documents every dataset kgrag reads: its public source, licence, the files to fetch (pinned to a
commit) and where each file goes under the data directory (``KGRAG_DATA_DIR``). :func:`download` fetches them
over HTTP; on any failure it raises :class:`~kgrag.errors.DownloadError` with the URL and the manual steps.

The files in the shared test data were derived from these sources as described in its README:
MetaQA's ``kb.txt`` there is de-duplicated (the download keeps the original's 1,159 duplicate lines; the reader
reports them as issues and keeps one copy), and the WebQSP/CWQ files there are samples (100/300 questions) of
the full files downloaded here.
"""

from __future__ import annotations

import http.client
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kgrag.errors import DataNotFoundError, DownloadError

__all__ = [
    "DATASETS",
    "MEANINGLESS_RELATIONS_DEFAULT",
    "DatasetSource",
    "RemoteFile",
    "download",
    "missing_data_error",
]

USER_AGENT = "kgrag-data-download/0.1"

# Freebase metadata relations (KG-R1 kgqa_agent direct_sparql_client skip_patterns, Apache-2.0): written as
# ``freebase/meaningless_relations.txt`` by ``download("freebase", …)`` because upstream has it only in code.
MEANINGLESS_RELATIONS_DEFAULT: tuple[str, ...] = (
    "type.object.type",
    "type.type.instance",
    "type.type.properties",
    "type.property.schema",
    "common.topic.article",
    "common.topic.image",
    "common.image_source",
    "common.document",
    "common.webpage",
    "common.license",
    "common.topic.description",
    "freebase.type_hints.included_types",
    "freebase.property_hints.best_value_properties",
    "freebase.property_hints.mediator",
    "freebase.property_hints.unit",
    "freebase.property_hints.expected_type",
    "freebase.type_hints.enumeration",
    "type.object.key",
    "type.object.permission",
    "type.object.profile",
    "type.object.service",
    "common.topic.topic_equivalent_webpage",
    "common.topic.topic_equivalent",
)


def _gh(repo: str, commit: str, path: str) -> str:
    """A GitHub raw-file URL pinned to a commit (github.com resolves abbreviated SHAs and redirects)."""
    return f"https://github.com/{repo}/raw/{commit}/{path}"


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """One file to fetch: its URL and its path relative to the data directory."""

    url: str
    dest: str


@dataclass(frozen=True, slots=True)
class DatasetSource:
    """A dataset's provenance and the files that make it up."""

    name: str
    description: str
    license: str
    homepage: str
    files: tuple[RemoteFile, ...]
    manual: str
    generated: Mapping[str, str] = field(default_factory=dict)  # dest -> text written by kgrag itself

    @property
    def subdir(self) -> str:
        """The folder under the data directory that holds this dataset (first component of its files)."""
        dests = [f.dest for f in self.files] + list(self.generated)
        return dests[0].split("/", 1)[0] if dests else self.name

    @property
    def source(self) -> str:
        """One line: where the data comes from and under which licence."""
        return f"{self.homepage} ({self.license})"


_METAQA_KEALLM = ("vaijsc/keallm", "cf68f911")
_MEDICAL_REPO = ("Tonystark-001/MedicalKGQA", "47e5b295")
_CE_PROMPT = ("Trenx-J/CE-Prompt", "d5f183c6")

DATASETS: dict[str, DatasetSource] = {
    "metaqa": DatasetSource(
        name="metaqa",
        description="MetaQA: WikiMovies KB (kb.txt) and 1/2/3-hop dev questions with question types.",
        license="CC BY 3.0",
        homepage="https://github.com/yuyuz/MetaQA (files on Google Drive, linked from that README)",
        files=(
            RemoteFile(_gh(*_METAQA_KEALLM, "data/MetaQA/kb.txt"), "metaqa/kb.txt"),
            *(
                RemoteFile(_gh(*_METAQA_KEALLM, f"data/MetaQA/{k}-hop/{fname}"), f"metaqa/{k}-hop/{fname}")
                for k in (1, 2, 3)
                for fname in ("dev.txt", "dev_qtype.txt")
            ),
        ),
        manual=(
            "Download the MetaQA folder from the Google Drive link in https://github.com/yuyuz/MetaQA; copy "
            "kb.txt to <data_dir>/metaqa/kb.txt, and for k in 1,2,3 copy {k}-hop/vanilla/qa_dev.txt to "
            "<data_dir>/metaqa/{k}-hop/dev.txt and {k}-hop/qa_dev_qtype.txt to <data_dir>/metaqa/{k}-hop/dev_qtype.txt."
        ),
    ),
    "freebase": DatasetSource(
        name="freebase",
        description="Freebase-flavoured question sets (WebQSP test, CWQ test) and the CWQ relation whitelist.",
        license="WebQSP, CWQ: see their release pages; whitelist: Apache-2.0 (KG-R1)",
        homepage="https://www.microsoft.com/en-us/download/details.aspx?id=52763, "
        "https://www.tau-nlp.sites.tau.ac.il/compwebq",
        files=(
            RemoteFile(
                _gh("XuShuwenn/KG-R1", "ce303f38", "filtered_cwq_white_list.json"),
                "freebase/filtered_cwq_white_list.json",
            ),
            RemoteFile(_gh("Wangshuaiia/GraSP", "0b7d63cd", "data/WebQSP.json"), "freebase/WebQSP.json"),
            RemoteFile(_gh("IDEA-FinAI/ToG", "7ccbb92e", "data/cwq.json"), "freebase/cwq.json"),
        ),
        generated={"freebase/meaningless_relations.txt": "\n".join(MEANINGLESS_RELATIONS_DEFAULT) + "\n"},
        manual=(
            "Get filtered_cwq_white_list.json from https://github.com/XuShuwenn/KG-R1, data/WebQSP.json from "
            "https://github.com/Wangshuaiia/GraSP and data/cwq.json from https://github.com/IDEA-FinAI/ToG, and "
            "put them under <data_dir>/freebase/ (the readers take any file in these formats, e.g. the "
            "100/300-question samples webqsp_100.json / cwq_300.json)."
        ),
    ),
    "medical": DatasetSource(
        name="medical",
        description="Chinese medical KG (8,792 xywy.com diseases) and 19,702 patient questions paired with Cypher.",
        license="see the two source repositories",
        homepage="https://github.com/Tonystark-001/MedicalKGQA, https://github.com/Trenx-J/CE-Prompt",
        files=(
            *(
                RemoteFile(
                    _gh(*_MEDICAL_REPO, f"data/medical_{i}.json"), f"medical/diseases/medical_{i}.json"
                )
                for i in range(18)
            ),
            RemoteFile(
                _gh(*_CE_PROMPT, "primary_data/data_train.json"), "medical/questions_cypher_train.json"
            ),
        ),
        manual=(
            "Copy data/medical_0.json … data/medical_17.json from https://github.com/Tonystark-001/MedicalKGQA to "
            "<data_dir>/medical/diseases/, and primary_data/data_train.json from "
            "https://github.com/Trenx-J/CE-Prompt to <data_dir>/medical/questions_cypher_train.json."
        ),
    ),
}


def missing_data_error(path: Path, dataset: str | None = None, what: str = "data") -> DataNotFoundError:
    """The error to raise when a dataset file or folder is absent: names the path and ``KGRAG_DATA_DIR``."""
    msg = f"{what} not found: {path}. kgrag reads datasets from the folder set by KGRAG_DATA_DIR"
    msg += " (default ../shared/data beside the checkout, else ./data)."
    source = DATASETS.get(dataset or "")
    if source is not None:
        msg += (
            f" To get {source.name}, run `kgrag data download {source.name}` (needs network) "
            f"or by hand: {source.manual}"
        )
    return DataNotFoundError(msg)


def _fetch(url: str, target: Path, timeout: float) -> None:
    """Stream ``url`` into ``target`` atomically (temporary file in the same folder, then rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(request, timeout=timeout) as response:
            shutil.copyfileobj(response, out, length=1 << 20)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def _describe(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    reason = getattr(exc, "reason", None) or exc
    return f"{type(exc).__name__}: {reason}"


def download(
    name: str,
    dest_dir: str | Path,
    timeout: float = 30,
    *,
    overwrite: bool = False,
    registry: Mapping[str, DatasetSource] | None = None,
) -> Path:
    """Download dataset ``name`` into ``dest_dir`` (the data directory) and return ``dest_dir``.

    Files already present are kept unless ``overwrite``. ``registry`` replaces :data:`DATASETS` (tests, mirrors).
    Raises :class:`DownloadError` for an unknown name or on any network/HTTP/file failure.
    """
    sources = DATASETS if registry is None else registry
    if name not in sources:
        raise DownloadError(f"unknown dataset {name!r}; valid names: {', '.join(sorted(sources))}.")
    source = sources[name]
    root = Path(dest_dir).expanduser().resolve()
    for remote in source.files:
        target = root / remote.dest
        if target.exists() and not overwrite:
            continue
        try:
            _fetch(remote.url, target, timeout)
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            raise DownloadError(
                f"Downloading dataset {name!r} failed: could not fetch {remote.url} ({_describe(exc)}). "
                f"Obtain it manually: {source.manual} Put the files under {root} (or any folder) "
                f"and point KGRAG_DATA_DIR at that folder; expected file: {remote.dest}."
            ) from exc
    for rel, text in source.generated.items():
        target = root / rel
        if overwrite or not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return root
