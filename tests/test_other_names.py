"""Other names the data does not record: learned contractions (kgrag.search.contraction), segment matching
(kgrag.search.name_segments), one-substitution bigram retrieval (kgrag.search.name_ngrams), their index and
storage forms (kgrag.search.other_names, kgrag.search.storage_forms) on a tiny network, the LLM's validated
standard-name rewrite over the scripted OpenAI-compatible server, with its fallbacks, and keyword extraction keeping
an unknown name whole before 有."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fixtures.fake_embedder import HashEmbedder
from fixtures.llm_server import Error, Reply

from kgrag.config import get_settings
from kgrag.network.schema.model import (
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
)
from kgrag.network.store import NetworkStore
from kgrag.search import standard_name
from kgrag.search.context_models import ContextConfig
from kgrag.search.contextual import ContextSessions, lexicon_for
from kgrag.search.contraction import ContractionModel, is_contraction, segment_patterns
from kgrag.search.keywords import extract_keywords
from kgrag.search.kn_models import KnSearchRequest
from kgrag.search.name_ngrams import NgramIndex, within_one_edit
from kgrag.search.name_segments import SegmentIndex, segments
from kgrag.search.other_names import OtherNameIndex
from kgrag.search.pipeline import context_search
from kgrag.search.storage_forms import keyword_forms

#: hand-made (full name, contraction) pairs: the first character of each word segment, or of the head segments
#: plus the last
PAIRS = [("慢性支气管炎", "慢支"), ("心肌梗死", "心梗"), ("化脓性脑膜炎", "化脑"), ("结核性脑膜炎", "结脑"),
         ("脑性瘫痪", "脑瘫"), ("流行性感冒", "流感"), ("类风湿关节炎", "类风关"), ("突发性耳聋", "突聋"),
         ("慢性阻塞性肺疾病", "慢阻肺")]

# -- contractions ----------------------------------------------------------------------------------------------------


def test_contractions_are_learned_from_pairs_not_from_contiguous_parts() -> None:
    assert is_contraction("慢性支气管炎", "慢支") and not is_contraction("小儿心肌梗死", "心肌梗死")
    assert ("F", "F", "-") in segment_patterns("慢性支气管炎", "慢支")  # 慢性|支气管|炎
    model = ContractionModel.learn([*PAIRS, ("小儿心肌梗死", "心肌梗死")])
    assert model.pairs == len(PAIRS)  # the contiguous pair is no contraction
    # learned from other names: applied to names no pair mentions
    assert "心衰" in dict(model.contractions("心力衰竭"))
    assert "老慢支" in dict(model.contractions("老年慢性支气管炎", limit=10))
    assert "风心病" in dict(model.contractions("风湿性心脏病", limit=10))
    for short, p in model.contractions("急性心肌梗死"):
        assert 2 <= len(short) < 6 and short not in "急性心肌梗死" and 0 < p <= 1
    assert ContractionModel.learn([]).contractions("慢性支气管炎") == []


def test_a_held_out_pair_is_predicted_from_the_others() -> None:
    """Leave-one-out on the hand-made pairs: most are recovered from the rest (statistics, no per-name rule)."""
    found = sum(short in dict(ContractionModel.learn([p for p in PAIRS if p != (full, short)]).contractions(full))
                for full, short in PAIRS)
    assert found >= len(PAIRS) - 2


# -- segments --------------------------------------------------------------------------------------------------------


def test_segments_join_to_the_name_and_split_long_words() -> None:
    assert segments("心肌梗死") == ("心肌", "梗死")
    assert segments("窦房阻滞") == ("窦房", "阻滞")
    for name in ["慢性支气管炎", "冠状动脉粥样硬化性心脏病", "α-地中海贫血"]:
        assert "".join(segments(name)) == name.replace("-", "").lower()


def test_an_ascii_piece_without_a_dictionary_word_splits_as_the_full_search_would(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from kgrag.search import name_segments
    from kgrag.search.name_segments import _split

    pieces = ["order", "0275410", "cathy", "home", "c++c++", "at&tcorp", "xc++", "blu-ray", "abcd", "心肌梗死", "α地中海"]
    assert {"c++", "c#"} <= importlib.import_module("kgrag.rank.tokenize").ascii_words()
    fast = [_split(p) for p in pieces]
    monkeypatch.setattr(name_segments, "no_dictionary_word", lambda text: False)  # every piece: the search
    assert fast == [_split(p) for p in pieces]
    assert fast[4] == ["c++", "c++"] and fast[0] == ["order"] and fast[3] == ["ho", "me"]


def test_segment_matching_finds_names_with_the_words_segments_in_order() -> None:
    index = SegmentIndex(["窦房传导阻滞", "窦房结", "慢性肾小球肾炎", "急性心肌梗死", "阻滞窦房传导"])
    hits = index.match("窦房阻滞")
    assert [index.names[i] for i, _ in hits] == ["窦房传导阻滞"]  # in order only
    assert 0 < hits[0][1] < 1
    assert [index.names[i] for i, _ in index.match("慢性肾炎")] == ["慢性肾小球肾炎"]
    assert index.match("心肌梗死") == []  # a contiguous part: the contains strategy's
    assert index.match("窦房") == []  # one segment


# -- one substituted character ----------------------------------------------------------------------------------------


def test_bigram_index_finds_one_substituted_character() -> None:
    names = ["红斑狼疮", "系统性红斑狼疮", "上、下气道梗阻", "红斑", "狼疮性肾炎"]
    index = NgramIndex(names)
    assert [(names[i], d) for i, d in index.one_edit("红斑狼仓", substitution_only=True)] == [("红斑狼疮", 1)]
    assert [names[i] for i, _ in index.one_edit("系统性红斑狼仓")] == ["系统性红斑狼疮"]
    assert index.one_edit("红斑狼疮")[0] == (0, 0)  # equal: distance 0 first
    assert index.one_edit("上气道梗阻", substitution_only=True) == []  # an insertion, not a substitution
    assert [names[i] for i, _ in index.one_edit("上气道梗阻")] == ["上、下气道梗阻"]
    assert index.one_edit("红癍") == []  # too short
    assert within_one_edit("abcd", "abxd") and within_one_edit("abcd", "abd") and not within_one_edit("abcd", "acbd")


# -- the index of a type ------------------------------------------------------------------------------------------


NAMES = ["慢性支气管炎", "老年慢性支气管炎", "心肌梗死", "小儿心肌梗死", "红斑狼疮", "窦房传导阻滞", "神经性厌食症",
         "心力衰竭", "脑膜炎"]
RECORDED = [*PAIRS, ("神经性贪食症", "精神性贪食症"), ("神经性呕吐", "精神性呕吐")]  # 精神 -> 神经 in two pairs


def test_other_name_index_combines_the_strategies() -> None:
    index = OtherNameIndex.build([(f"d{i}", n) for i, n in enumerate(NAMES)], RECORDED)

    def found(word: str) -> list[tuple[str, str]]:
        return [(index.names[o.position], o.match_type) for o in index.lookup(word)]

    assert found("慢支")[0] == ("慢性支气管炎", "abbreviation")
    assert found("老慢支")[0] == ("老年慢性支气管炎", "abbreviation")
    assert found("心衰")[0] == ("心力衰竭", "abbreviation")  # no pair names 心力衰竭
    assert found("小儿心梗")[0] == ("小儿心肌梗死", "abbreviation")  # composed: 小儿 + 心梗's full name
    assert found("精神性厌食症")[0] == ("神经性厌食症", "segments")  # learned 精神 -> 神经 (two pairs)
    once = OtherNameIndex.build([(f"d{i}", n) for i, n in enumerate(NAMES)], [*PAIRS, RECORDED[-1]])
    assert not [o for o in once.lookup("精神性厌食症") if o.match_type == "segments"]  # seen once: no rule
    assert found("窦房阻滞")[0] == ("窦房传导阻滞", "segments")
    assert found("红斑狼仓")[0] == ("红斑狼疮", "ngram")
    assert found("心肌梗死") == [("小儿心肌梗死", "abbreviation")] or ("心肌梗死", "abbreviation") not in found(
        "心肌梗死")  # never the word's own stored name
    assert found("胃") == [] and found("完全无关的词") == []
    bare = OtherNameIndex.build([(f"d{i}", n) for i, n in enumerate(NAMES)], [])  # no recorded pairs
    assert [index.names[o.position] for o in bare.lookup("红斑狼仓")] == ["红斑狼疮"] and bare.lookup("慢支") == []


# -- storage forms on a tiny network ---------------------------------------------------------------------------------


OPS = ["knn", "match", "==", "contain", "prefix"]


@pytest.fixture(scope="module")
def store() -> NetworkStore:
    recorded: dict[str, list[str]] = {}
    for full, short in RECORDED:
        recorded.setdefault(full, []).append(short)
    net = KnowledgeNetwork(kn_id="on", name="other names", object_types=[
        ObjectType(id="disease", name="疾病", data_properties=[
            DataProperty(name="name", type="string", condition_operations=OPS),
            DataProperty(name="aliases", type="string[]", condition_operations=["contain", "exist"])]),
        ObjectType(id="symptom", name="症状", data_properties=[
            DataProperty(name="name", type="string", condition_operations=OPS)])],
        relation_types=[RelationType(id="has_symptom", name="症状", comment="疾病的症状",
                                     source_object_type_id="disease", target_object_type_id="symptom")])
    names = list(dict.fromkeys([*NAMES, *recorded]))
    instances = [Instance(object_type_id="disease", id=f"d{i}", properties={
        "name": n, **({"aliases": recorded[n]} if n in recorded else {})}) for i, n in enumerate(names)]
    s = NetworkStore("sqlite://", embedder=HashEmbedder("fake:other-names-test"))  # type: ignore[arg-type]
    fever = Instance(object_type_id="symptom", id="s0", properties={"name": "发热"})
    s.load(net, [*instances, fever], [Link(relation_type_id="has_symptom", source_id="d4", target_id="s0")])
    return s


def disease(store: NetworkStore) -> ObjectType:
    return next(ot for ot in store.get_network("on").object_types if ot.id == "disease")


def test_other_name_forms_rank_after_exact_and_alias_and_can_be_turned_off(store: NetworkStore) -> None:
    forms = keyword_forms(store, "on", "老慢支", disease(store), "name", ContextConfig())
    assert (forms[0].form, forms[0].match_type) == ("老年慢性支气管炎", "abbreviation")
    assert forms[0].sample_instance_id == "d1" and 0.6 <= forms[0].similarity <= 1
    alias = keyword_forms(store, "on", "心梗", disease(store), "name", ContextConfig())
    assert (alias[0].form, alias[0].match_type) == ("心肌梗死", "alias")  # recorded: the alias form wins
    assert "心肌梗死" not in [f.form for f in alias[1:]]
    off = keyword_forms(store, "on", "老慢支", disease(store), "name", ContextConfig(other_names=False))
    assert not {f.match_type for f in off} & {"abbreviation", "segments", "ngram", "standard_name"}


def test_context_search_keeps_its_response_shape_with_other_name_forms(store: NetworkStore) -> None:
    response = context_search(KnSearchRequest(query="红斑狼仓有哪些症状", kn_id="on"), store,
                              sessions=ContextSessions(), use_llm=False, reranker=None)
    top = response.contextual_knowledge.keyword_mappings[0]
    assert top.keyword == "红斑狼仓" and top.object_type_id == "disease" and top.match_confidence > 0.5
    assert (top.storage_forms[0].form, top.storage_forms[0].match_type) == ("红斑狼疮", "ngram")
    assert set(top.storage_forms[0].model_dump()) == {"form", "match_type", "sample_instance_id",
                                                       "sample_instance_name", "similarity"}


# -- the LLM's standard name ------------------------------------------------------------------------------------------


@pytest.fixture
def llm(llm_server, monkeypatch) -> Iterator[object]:  # noqa: ANN001
    monkeypatch.setenv("KGRAG_LLM_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("KGRAG_LLM_MODEL", "scripted-model")
    monkeypatch.setenv("KGRAG_LLM_MAX_RETRIES", "0")
    get_settings.cache_clear()
    standard_name._cache.clear()
    try:
        yield llm_server
    finally:
        get_settings.cache_clear()
        standard_name._cache.clear()


def answer(*names: str) -> str:
    return json.dumps({"standard_names": list(names)}, ensure_ascii=False)


def test_the_llm_standard_name_is_kept_when_it_is_a_stored_name(store: NetworkStore, llm) -> None:  # noqa: ANN001
    llm.script(answer("神经性厌食", "心力衰竭"))  # the first is no stored name: dropped
    forms = keyword_forms(store, "on", "心功能不全", disease(store), "name", ContextConfig(), use_llm=True)
    assert (forms[0].form, forms[0].match_type, forms[0].sample_instance_id) == ("心力衰竭", "standard_name", "d7")
    assert sum(f.match_type == "standard_name" for f in forms) == 1
    messages = llm.chat_requests[0].messages
    assert messages[-1]["content"] == "心功能不全" and "other names" in messages[0]["content"]  # the network
    # an answer that maps to a stored name by the other-name forms counts too (红斑狼仓 -> 红斑狼疮)
    llm.script(answer("红斑狼仓"))
    forms = keyword_forms(store, "on", "狼疮病", disease(store), "name", ContextConfig(), use_llm=True)
    assert (forms[0].form, forms[0].match_type) == ("红斑狼疮", "standard_name")
    # without use_llm (or with an exact form) the LLM is not asked
    before = len(llm.chat_requests)
    keyword_forms(store, "on", "心功能衰弱", disease(store), "name", ContextConfig())
    keyword_forms(store, "on", "心力衰竭", disease(store), "name", ContextConfig(), use_llm=True)
    assert len(llm.chat_requests) == before


def test_the_llm_rewrite_falls_back_to_the_llm_free_forms(store: NetworkStore, llm) -> None:  # noqa: ANN001
    expected = keyword_forms(store, "on", "老慢支", disease(store), "name", ContextConfig())
    llm.script(answer("某种并不存在的病"))  # not a stored name, maps to none
    assert keyword_forms(store, "on", "老慢支", disease(store), "name", ContextConfig(), use_llm=True) == expected
    llm.script("the standard name is 慢性支气管炎", "still not JSON")  # invalid output twice
    assert keyword_forms(store, "on", "老慢支x", disease(store), "name", ContextConfig(), use_llm=True) == \
        keyword_forms(store, "on", "老慢支x", disease(store), "name", ContextConfig())
    llm.script(Error(500, "down"))  # the LLM fails: no exception, the LLM-free forms
    assert keyword_forms(store, "on", "红斑狼仓", disease(store), "name", ContextConfig(), use_llm=True)[0] \
        .match_type == "ngram"
    llm.stop()  # the LLM is gone altogether
    response = context_search(KnSearchRequest(query="老慢支有哪些症状", kn_id="on"), store,
                              sessions=ContextSessions(), use_llm=True, reranker=None)
    top = response.contextual_knowledge.keyword_mappings[0]
    assert (top.storage_forms[0].form, top.storage_forms[0].match_type) == ("老年慢性支气管炎", "abbreviation")


def test_a_reply_is_validated_against_the_schema(llm) -> None:  # noqa: ANN001
    llm.script(Reply(answer("  慢性支气管炎 ", "慢性支气管炎", "老慢支")))
    assert standard_name.standard_names("老慢支", "medical") == ["慢性支气管炎"]  # stripped, deduplicated, not itself
    assert standard_name.standard_names("老慢支", "medical") == ["慢性支气管炎"]  # cached: one request
    assert len(llm.chat_requests) == 1
    assert standard_name.validated(["甲", "乙", "丙"], {"甲": [], "乙": [3], "丙": [3, 4]}.get) == [("乙", 3), ("丙", 4)]


def test_a_function_character_glued_to_an_unknown_name_is_split_off(store: NetworkStore) -> None:
    """jieba's HMM glues 有 to an unknown word (症有, 病有): the keyword must still be the user's whole name."""
    lexicon = lexicon_for(store, "on")
    for name in ["原醛症", "单室心", "Ollier病", "宫腔积液"]:
        assert [e.text for e in extract_keywords(f"{name}有哪些症状", lexicon).entities] == [name]
    assert [e.text for e in extract_keywords("红斑狼疮有哪些症状", lexicon).entities] == ["红斑狼疮"]


def test_ascii_word_pieces_are_jiebas_own() -> None:
    """The ASCII fast path of ``word_pieces`` gives jieba's pieces: random texts over letters, digits, jieba's block
    punctuation, spaces and other ASCII, and the bench network's kinds of names."""
    import importlib
    import random

    from kgrag.text import fold_width

    tokenize = importlib.import_module("kgrag.rank.tokenize")  # the package exports a function of that name

    rng = random.Random(7)
    alphabet = "abcxyz019" * 3 + "+#&._%-" + " \t\n\r" + "!?,;:'\"()/@"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(4000)]
    texts += ["order 0275410 of I Saw What You Did", "Cathy Come Home Blu-ray", "3.5% off", "v1.2.3-rc",
              "a  b\r\nc", "x.5%y", "..", "5%", "%5", "great sci-fi review", "c++ and c# guide", "AT&T store"]
    segmenter = tokenize._get_segmenter()
    fast_taken = 0
    for text in texts:
        folded = fold_width(text)
        jieba_pieces = list(segmenter.cut(folded, HMM=True))
        assert tokenize.word_pieces(text) == jieba_pieces, text
        fast_taken += tokenize.no_dictionary_word(folded)
    assert fast_taken > 3500  # the fast path answered most of them
