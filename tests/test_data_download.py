"""Dataset downloads: registry sanity, a real HTTP download from a local server, and the failure paths."""

from __future__ import annotations

import dataclasses
import functools
import http.server
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgrag.data.download import (
    DATASETS,
    MEANINGLESS_RELATIONS_DEFAULT,
    DatasetSource,
    RemoteFile,
    download,
    missing_data_error,
)
from kgrag.data.freebase import read_meaningless_relations
from kgrag.errors import DataNotFoundError, DownloadError


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
        pass


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A static HTTP server on 127.0.0.1 (free port) serving a temporary folder; stopped after the test."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _source(*files: RemoteFile, generated: dict[str, str] | None = None) -> DatasetSource:
    return DatasetSource(
        name="tiny",
        description="test",
        license="none",
        homepage="http://example.org",
        files=files,
        manual="copy tiny.txt by hand.",
        generated=generated or {},
    )


def test_registry_documents_every_dataset() -> None:
    assert set(DATASETS) == {"metaqa", "freebase", "medical"}
    for name, source in DATASETS.items():
        assert source.name == name and source.manual and source.license and source.homepage
        assert source.subdir == name and source.homepage in source.source
        assert all(f.url.startswith("https://github.com/") and "/raw/" in f.url for f in source.files)
        assert all(not f.dest.startswith("/") and f.dest.startswith(f"{name}/") for f in source.files)
    dests = {f.dest for s in DATASETS.values() for f in s.files}
    assert {"metaqa/kb.txt", "metaqa/3-hop/dev.txt", "metaqa/3-hop/dev_qtype.txt"} <= dests
    assert {f"medical/diseases/medical_{i}.json" for i in range(18)} <= dests
    assert "medical/questions_cypher_train.json" in dests
    assert "freebase/filtered_cwq_white_list.json" in dests
    assert "yuyuz/MetaQA" in DATASETS["metaqa"].homepage


def test_download_from_local_server(file_server: tuple[str, Path], tmp_path: Path) -> None:
    base, served = file_server
    (served / "a.txt").write_text("A|r|B\n", encoding="utf-8")
    (served / "sub").mkdir()
    (served / "sub" / "b.json").write_bytes(b"[1, 2, 3]")
    meaningless = "\n".join(MEANINGLESS_RELATIONS_DEFAULT) + "\n"
    source = _source(
        RemoteFile(f"{base}/a.txt", "tiny/kb.txt"),
        RemoteFile(f"{base}/sub/b.json", "tiny/deep/b.json"),
        generated={"tiny/meaningless_relations.txt": meaningless},
    )
    dest = tmp_path / "data"
    assert download("tiny", dest, timeout=5, registry={"tiny": source}) == dest.resolve()
    assert (dest / "tiny" / "kb.txt").read_text(encoding="utf-8") == "A|r|B\n"
    assert (dest / "tiny" / "deep" / "b.json").read_bytes() == b"[1, 2, 3]"
    assert read_meaningless_relations(dest / "tiny" / "meaningless_relations.txt") == list(
        MEANINGLESS_RELATIONS_DEFAULT
    )
    assert not list(dest.rglob("*.part"))
    # existing files are kept: a second run succeeds even when the source is gone
    (served / "a.txt").unlink()
    download("tiny", dest, timeout=5, registry={"tiny": source})
    with pytest.raises(DownloadError, match="404"):
        download("tiny", dest, timeout=5, registry={"tiny": source}, overwrite=True)
    assert (dest / "tiny" / "kb.txt").read_text(encoding="utf-8") == "A|r|B\n"  # not clobbered by the failure


def test_network_failure_raises_download_error_quickly(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/kb.txt"
    source = _source(RemoteFile(url, "tiny/kb.txt"))
    start = time.monotonic()
    with pytest.raises(DownloadError) as err:
        download("tiny", tmp_path, timeout=2, registry={"tiny": source})
    assert time.monotonic() - start < 5
    message = str(err.value)
    assert url in message and "KGRAG_DATA_DIR" in message and "copy tiny.txt by hand" in message
    assert not (tmp_path / "tiny" / "kb.txt").exists() and not list(tmp_path.rglob("*.part"))


def test_real_registry_failure_names_url_and_manual_steps(tmp_path: Path) -> None:
    # the real whitelist URL only (small); without internet the fetch fails with the URL and the manual steps
    real = DATASETS["freebase"]
    only_whitelist = dataclasses.replace(real, files=real.files[:1], generated={})
    try:
        download("freebase", tmp_path, timeout=3, registry={"freebase": only_whitelist})
    except DownloadError as exc:
        message = str(exc)
        assert (
            "https://github.com/" in message and "KGRAG_DATA_DIR" in message and "XuShuwenn/KG-R1" in message
        )
    else:
        assert (tmp_path / "freebase" / "filtered_cwq_white_list.json").is_file()


def test_unknown_dataset_lists_valid_names(tmp_path: Path) -> None:
    with pytest.raises(
        DownloadError, match="unknown dataset 'wikidata'; valid names: freebase, medical, metaqa"
    ):
        download("wikidata", tmp_path)


def test_missing_data_error_message(tmp_path: Path) -> None:
    err = missing_data_error(tmp_path / "metaqa" / "kb.txt", "metaqa", "MetaQA KB file")
    assert isinstance(err, DataNotFoundError)
    text = str(err)
    assert str(tmp_path / "metaqa" / "kb.txt") in text and "KGRAG_DATA_DIR" in text
    assert "kgrag data download metaqa" in text and "qa_dev_qtype.txt" in text
