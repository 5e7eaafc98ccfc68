"""kgrag.rank.tokenize: English, Freebase relation names, Chinese (jieba), mixed text."""

from __future__ import annotations

from kgrag.rank.tokenize import add_words, tokenize


def test_english_lowercases_and_drops_stop_words() -> None:
    assert tokenize("What is the Place of Birth of Barack Obama?") == ["place", "birth", "barack", "obama"]


def test_stop_words_are_optional() -> None:
    assert tokenize("the place of birth", stopwords=False) == ["the", "place", "of", "birth"]


def test_freebase_relation_names_split_on_dots_and_underscores() -> None:
    relation = "people.person.place_of_birth"
    assert tokenize(relation, stopwords=False) == ["people", "person", "place", "of", "birth"]
    assert tokenize(relation) == ["people", "person", "place", "birth"]
    assert tokenize("film.film.directed_by") == ["film", "film", "directed"]


def test_numbers_and_ids_are_kept() -> None:
    assert tokenize("born in 1961, dose 3.5 mg") == ["born", "1961", "dose", "3.5", "mg"]
    assert tokenize("m.0abc123") == ["m", "0abc123"]


def test_chinese_is_segmented_into_words() -> None:
    assert tokenize("上气道梗阻的常用药物") == ["上", "气道", "梗阻", "常用", "药物"]
    assert tokenize("高血压患者应该吃什么药？") == ["高血压", "患者", "吃", "药"]


def test_chinese_stop_words_and_punctuation_dropped() -> None:
    tokens = tokenize("周杰伦的出生地是哪里？！")
    assert tokens == ["周杰伦", "出生地"]
    assert tokenize("，。！？、；：") == []


def test_mixed_chinese_english_and_full_width() -> None:
    assert tokenize("COVID-19疫苗 and 阿莫西林500mg胶囊") == [
        "covid",
        "19",
        "疫苗",
        "阿莫西林",
        "500mg",
        "胶囊",
    ]
    assert tokenize("ｆｉｌｍ　ｄｉｒｅｃｔｏｒ，导演") == ["film", "director", "导演"]
    assert tokenize("film.film.directed_by 导演是谁") == ["film", "film", "directed", "导演"]


def test_empty_and_deterministic() -> None:
    assert tokenize("") == []
    assert tokenize("   ...  ") == []
    text = "上气道梗阻的常用药物 people.person.nationality"
    assert all(tokenize(text) == tokenize(text) for _ in range(3))


def test_add_words_keeps_instance_names_whole() -> None:
    assert tokenize("服用喵喵药片的剂量") == ["服用", "喵", "喵", "药片", "剂量"]
    assert add_words(["喵喵药片", "喵喵维生素B12", "  "]) == 2
    assert tokenize("服用喵喵药片的剂量") == ["服用", "喵喵药片", "剂量"]
    # dictionary words are normalised like text, so mixed-script names match case-insensitively
    assert tokenize("喵喵维生素b12的作用") == ["喵喵维生素b12", "作用"]


def test_tokenize_cache_gives_the_same_tokens_and_forgets_on_add_words() -> None:
    from kgrag.rank.domain import tokenize_many
    from kgrag.rank.tokenize import tokenize_cache

    texts = ["高血压患者应该吃什么药？高血压患者。", "COVID-19疫苗 and 阿莫西林500mg胶囊", "ｆｉｌｍ　ｄｉｒｅｃｔｏｒ，导演",
             "people.person.place_of_birth", "", "剂量3.5mg，每日2次；㐀䶵字。", "上气道梗阻的常用药物"]
    plain = [tokenize(t) for t in texts]
    plain_all = [tokenize(t, stopwords=False) for t in texts]
    with tokenize_cache() as cache:
        assert [tokenize(t) for t in texts] == plain and cache
        assert [tokenize(t, stopwords=False) for t in texts] == plain_all
        assert tokenize_many(texts) == plain and tokenize_many(texts, stopwords=False) == plain_all
        add_words(["喵呜呜药丸"])  # a made-up word: other tests' texts segment as before
        assert not cache  # segmented with the old dictionary: dropped
        assert tokenize("吃喵呜呜药丸。") == tokenize_many(["吃喵呜呜药丸。"])[0] == ["吃", "喵呜呜药丸"]
    assert tokenize_many(texts[:4]) == plain[:4]
