"""The structure words of a Chinese question: the Chinese tables and their reader (what
:func:`kgrag.query_graph.cues.read_cues` calls for a question holding a CJK character).

    read("1900年以前出版的书有哪些").comparison.op  # '<'

Contract: :func:`read` never raises and fills the same :class:`~kgrag.query_graph.cues.model.Cues` fields as
the English reader (see :mod:`kgrag.query_graph.cues` for what each cue is); the answer kind of a bare question
word (谁, 哪里, 什么时候, 哪一年) comes from :data:`kgrag.text.PLANNER_KINDS_ZH`.
"""

from __future__ import annotations

import re
from typing import Literal

from kgrag.query_graph.cues.model import YEAR, Comparison, Cues, Superlative, between, decade
from kgrag.text import PLANNER_KINDS_ZH, answer_kind

__all__ = ["read"]

_CJK = "\u4e00-\u9fff"
#: characters that end a Chinese noun run (particles, verbs of being / having, punctuation)
_ZH_STOP = "的了是有在和与及或吗呢吧啊么呀嘛？?，,。！!、；;：:"
_ZH_NOUN = rf"([{_CJK}]+)"
#: measure words of things counted (多少种 / 几本 / 几个); 几天 / 几年 / 几次 are durations and frequencies
_ZH_MEASURE = "个种类位本部家条名所项首座只件篇颗款样支门张场册届"
_ZH_COUNT = re.compile(rf"(?<![哪好十这那几])(多少|几)\s*([{_ZH_MEASURE}])(?:{_ZH_NOUN})?")
#: a bare 多少 ("多少钱", "是多少") and 多 + an adjective ask a number, like "how much" / "how long"
_ZH_HOW_MUCH = re.compile(r"多少")
_ZH_HOW_VALUE = re.compile(r"多(长|高|大|重|远|久|深|老)")
_ZH_HOW_VALUE_WORDS = {"长": ("长度", "时长", "length"), "高": ("高度", "height"), "大": ("大小", "年龄", "size"),
                       "重": ("重量", "weight"), "远": ("距离", "distance"), "久": ("时长", "时间", "duration"),
                       "深": ("深度", "depth"), "老": ("年龄", "出生", "age")}
_ZH_NUMBER = r"(\d+(?:\.\d+)?)\s*(万|亿|千)?"
_ZH_UNITS = {"千": 1e3, "万": 1e4, "亿": 1e8}
_ZH_NUM_OPS = {"超过": ">", "多于": ">", "大于": ">", "高于": ">", "长于": ">", "重于": ">", "不少于": ">=",
               "至少": ">=", "不低于": ">=", "不小于": ">=", "少于": "<", "小于": "<", "低于": "<", "不到": "<",
               "短于": "<", "轻于": "<", "不超过": "<=", "不多于": "<=", "至多": "<=", "不大于": "<=", "等于": "="}
_ZH_NUM_CMP = re.compile("(" + "|".join(sorted(_ZH_NUM_OPS, key=len, reverse=True)) + r")\s*" + _ZH_NUMBER
                         + rf"\s*([{_CJK}]{{1,4}})?")
#: "300页以上" / "100万以下": the bound before the word
_ZH_NUM_AFTER = re.compile(_ZH_NUMBER + rf"\s*([{_CJK}]{{0,3}}?)\s*(以上|以下)")
_ZH_BETWEEN_YEARS = re.compile(rf"{YEAR}\s*年?\s*(?:到|至|—|-|~)\s*{YEAR}\s*年(?:之间|间)?")
_ZH_BETWEEN_NUM = re.compile(r"(?:介于)?\s*(\d+(?:\.\d+)?)\s*(?:到|至|和)\s*(\d+(?:\.\d+)?)\s*"
                             rf"([{_CJK}]{{0,3}}?)\s*之间")
_ZH_DECADE = re.compile(r"(1[0-9]{2}0|20[0-9]0)\s*年代")
_ZH_YEAR_CMP = re.compile(rf"(自|从|在|于)?\s*{YEAR}\s*年\s*(以前|之前|前|以后|之后|后|以来|起|开始)?")
_ZH_YEAR_OPS: dict[str, Literal["<", ">", ">="]] = {"以前": "<", "之前": "<", "前": "<", "以后": ">", "之后": ">",
                                                    "后": ">", "以来": ">=", "起": ">=", "开始": ">="}
#: superlative word -> (direction, kind, property words it hints)
_ZH_SUPERLATIVES: dict[str, tuple[Literal["max", "min"], Literal["date", "number"], tuple[str, ...]]] = {
    "最早": ("min", "date", ("日期", "年份", "时间", "出版", "出生", "成立", "发布", "date", "year")),
    "最晚": ("max", "date", ("日期", "年份", "时间", "出版", "发布", "date", "year")),
    "最迟": ("max", "date", ("日期", "年份", "时间", "出版", "发布", "date", "year")),
    "最新": ("max", "date", ("日期", "年份", "出版", "发布", "date", "year", "published", "released")),
    "最旧": ("min", "date", ("日期", "年份", "出版", "date", "year")),
    "最老": ("min", "date", ("出生", "年份", "日期", "birth", "born", "year")),
    "最年长": ("min", "date", ("出生", "年份", "日期", "birth", "born", "year")),
    "最年轻": ("max", "date", ("出生", "年份", "日期", "birth", "born", "year")),
    "最长": ("max", "number", ("长度", "时长", "页数", "length", "pages", "duration")),
    "最短": ("min", "number", ("长度", "时长", "页数", "length", "pages", "duration")),
    "最大": ("max", "number", ("大小", "面积", "规模", "人口", "size", "area", "population")),
    "最小": ("min", "number", ("大小", "面积", "规模", "人口", "size", "area", "population")),
    "最高": ("max", "number", ("高度", "海拔", "height", "elevation")),
    "最低": ("min", "number", ("高度", "海拔", "height", "elevation")),
    "最重": ("max", "number", ("重量", "weight", "mass")),
    "最轻": ("min", "number", ("重量", "weight", "mass")),
    "最贵": ("max", "number", ("价格", "费用", "price", "cost")),
    "最便宜": ("min", "number", ("价格", "费用", "price", "cost")),
}
_ZH_SUPERLATIVE = re.compile("(" + "|".join(sorted(_ZH_SUPERLATIVES, key=len, reverse=True)) + ")")
#: "写的书最多" / "获奖最多的" (the noun before) and "最多书的" (the noun after): an argmax / argmin over a count;
#: "最多能活" / "最少3次" (at most / at least) are not
_ZH_MOST_BEFORE = re.compile(rf"([{_CJK}]+?)\s*(最多|最少)(?=\s*(?:的|[？?。，,！!]|$))")
_ZH_MOST_AFTER = re.compile(rf"(最多|最少)\s*([{_CJK}]+?)的")
_ZH_WHICH = re.compile(rf"(?:哪|什么)(?:一|几)?(?:些|个|种|类|位|本|部|家|条|项|首|座|只|件|篇|所|名)?\s*{_ZH_NOUN}")
#: "…的书有哪些" / "…的作者是哪位": the noun before the question word; "…出版的书" (a list asked): the final noun
_ZH_WHICH_AFTER = re.compile(rf"的\s*([{_CJK}]+?)\s*(?:有|是|为)\s*(?:哪|什么)")
_ZH_FINAL_NOUN = re.compile(rf"的\s*([{_CJK}]+)\s*[？?。！!]?\s*$")
_ZH_VALUE_NOUNS = {"年": "year", "年份": "year", "时候": "date", "日期": "date", "天": "date", "里": "place",
                   "儿": "place", "地方": "place"}


def _zh_run(text: str) -> str:
    """A Chinese noun run cut at its first particle ("疾病属于儿科" stays whole; "书的作者" → "书")."""
    cut = re.split(f"[{re.escape(_ZH_STOP)}]", text, maxsplit=1)[0]
    return cut[:6]


def _zh_number(text: str, unit: str | None) -> float:
    return float(text) * _ZH_UNITS.get(unit or "", 1.0)


def _comparison(question: str) -> Comparison | None:
    m = _ZH_BETWEEN_YEARS.search(question)
    if m:
        return between(m, "year")
    m = _ZH_DECADE.search(question)
    if m:
        return decade(m, float(m.group(1)))
    m = _ZH_BETWEEN_NUM.search(question)
    if m:
        return between(m, "number", (m.group(3),) if m.group(3) else ())
    m = _ZH_NUM_CMP.search(question)
    if m:
        unit_word = _zh_run(m.group(4) or "")
        end = m.start(4) + len(unit_word) if m.group(4) else m.end()
        is_year = re.fullmatch(YEAR, m.group(2)) is not None and unit_word.startswith("年")
        words = () if is_year or not unit_word else (unit_word,)
        return Comparison(_ZH_NUM_OPS[m.group(1)], _zh_number(m.group(2), m.group(3)), "year" if is_year else "number",
                          question[m.start():end], words=words, span=(m.start(), end))
    m = _ZH_NUM_AFTER.search(question)
    if m:
        word = m.group(3) or ""
        is_year = re.fullmatch(YEAR, m.group(1)) is not None and word.startswith("年")
        op: Literal[">=", "<="] = ">=" if m.group(4) == "以上" else "<="
        # the property named before the number ("页数300以上")
        before = re.search(rf"([{_CJK}]+)\s*$", question[: m.start()])
        named = re.split(f"[{re.escape(_ZH_STOP)}]", before.group(1))[-1][-4:] if before else ""
        words = tuple(w for w in (word, named) if w) if not is_year else ()
        return Comparison(op, _zh_number(m.group(1), m.group(2)), "year" if is_year else "number", m.group(0),
                          words=words, span=m.span())
    m = _ZH_YEAR_CMP.search(question)
    if m:
        suffix = m.group(3) or ""
        op_year = _ZH_YEAR_OPS.get(suffix) or (">=" if m.group(1) in ("自", "从") else "=")
        return Comparison(op_year, float(m.group(2)), "year", m.group(0).strip(), span=m.span())
    return None


def _superlative(question: str) -> Superlative | None:
    m = _ZH_MOST_AFTER.search(question)
    if m:
        noun = _zh_run(m.group(2))
        direction: Literal["max", "min"] = "max" if m.group(1) == "最多" else "min"
        return Superlative(direction, "number", m.group(0), (noun,) if noun else (), (m.start(), m.end(1)),
                           counts=True)
    m = _ZH_MOST_BEFORE.search(question)
    if m:
        before = re.split(f"[{re.escape(_ZH_STOP)}]", m.group(1))[-1]
        noun = before[-4:]
        direction = "max" if m.group(2) == "最多" else "min"
        return Superlative(direction, "number", m.group(2), (noun,) if noun else (), m.span(2), counts=True)
    m = _ZH_SUPERLATIVE.search(question)
    if m is None:
        return None
    direction, kind, words = _ZH_SUPERLATIVES[m.group(1)]
    return Superlative(direction, kind, m.group(0), words, m.span())


def _answer(text: str, superlative: Superlative | None, cue_spans: list[tuple[int, int]]
            ) -> tuple[str, list[str], tuple[str, ...], tuple[int, int] | None]:
    """``(answer kind, answer words, value words, the span of a value cue)`` of a Chinese question."""
    kind = answer_kind(text, PLANNER_KINDS_ZH)
    if kind:
        return kind, [], (), None
    for pattern in (_ZH_WHICH, _ZH_WHICH_AFTER):
        which = pattern.search(text)
        noun = _zh_run(_before_cues(text, which.start(1), which.end(1), cue_spans)) if which is not None else ""
        if noun in _ZH_VALUE_NOUNS:
            return _ZH_VALUE_NOUNS[noun], [], (), None
        if noun and noun not in _ZH_MEASURE + "些":
            return "", [noun], (), None
    how = _ZH_HOW_VALUE.search(text)
    if how is not None:
        return "number", [], _ZH_HOW_VALUE_WORDS[how.group(1)], how.span()
    how_much = _ZH_HOW_MUCH.search(text)
    if how_much is not None:
        return "number", [], (), how_much.span()
    if superlative is not None and not superlative.counts:
        after = re.match(rf"的\s*([{_CJK}]+)", text[superlative.span[1]:])
        if after is not None and _zh_run(after.group(1)):
            return "", [_zh_run(after.group(1))], (), None
    final = _ZH_FINAL_NOUN.search(text)
    if final is not None and _zh_run(final.group(1)):
        return "", [_zh_run(final.group(1))], (), None
    return "", [], (), None


def _before_cues(text: str, start: int, end: int, cue_spans: list[tuple[int, int]]) -> str:
    """``text[start:end]`` cut where a cue's words begin ("书出版最早" → "书出版")."""
    for a, _ in cue_spans:
        if start <= a < end:
            end = a
    return text[start:end]


def read(text: str) -> Cues:
    """The Chinese question's structure words (the same structure as for English); never raises."""
    spans: list[tuple[int, int]] = []
    count_noun: str | None = None
    m = _ZH_COUNT.search(text)
    if m:
        count_noun = _zh_run(m.group(3) or "")
        spans.append(m.span(0) if not m.group(3) else (m.start(), m.start(3)))
    comparison = _comparison(text)
    if comparison is not None:
        spans.append(comparison.span)
    superlative = _superlative(text)
    if superlative is not None:
        spans.append(superlative.span)
    kind, answer_words, value_words, value_span = ("", [], (), None)
    if count_noun is None:
        kind, answer_words, value_words, value_span = _answer(text, superlative, spans)
        if value_span is not None:
            spans.append(value_span)
    elif count_noun:
        answer_words = [count_noun]
    return Cues(text, count_noun, comparison, superlative, kind, answer_words, value_words, spans)
