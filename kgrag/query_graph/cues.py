"""The structure words of a question, read without an LLM: what the planners of both kinds of graph turn into a
query graph's answer type, literal constraint and aggregation (:mod:`kgrag.query_graph.plan`).

    read_cues("Which winners of the Nobel Prize in Physics were born before 1900?")
    # Cues(comparison=Comparison(op="<", value=1900.0, kind="year", text="before 1900", …), answer_words=["winners"], …)

What is read (English, and the same structure from a question in Chinese: :func:`read_cues` switches on a CJK
character):

- **count**: "how many X" / "number of X" / "多少种 X" / "几本 X" (多少 or 几 with a measure word of things) →
  ``count_noun`` (``X``: "books"); whether it is a count of things or a numeric property ("how many pages") is
  the planner's call, on the graph. A bare "多少" ("多少钱", "是多少") asks a number, like "how much"; "几天",
  "几年", "几次", "好几", "哪几" are not counts;
- **comparison**: before / after / since / until / in YEAR, in the 1990s (a decade: between), between A and B,
  more / less / fewer than N, over / under / at least / at most N (with the noun after N as ``words``: "more than
  300 pages" → ``pages``); a 4-digit number with a time word is a year, else a number;
- **superlative**: oldest / youngest / earliest / latest / first / last / newest / most recent (dates), largest /
  biggest / longest / highest / tallest / deepest / heaviest / smallest / shortest / lowest / most / least /
  fewest … (numbers): the direction (``max`` / ``min``), the value kind and the property words it hints
  ("longest" → length long);
- **answer type**: "which / what <noun>" ("which country" → ``country``), who → person, when / what year → a date,
  where → place, "how long / tall / old / …" → a number with its property words;
- **Chinese**: comparisons 超过 / 多于 / 大于 / 至少 / 少于 / 小于 / 不到 / 不超过 N (the word after N as
  ``words``: "超过300页" → ``页``), N以上 / N以下, YEAR年以前 / 之前 (<), 以后 / 之后 (>), 以来 / 自 YEAR年 (>=),
  在 YEAR年 (=), YEAR年代 (a decade), A年到B年之间 / A到B之间 (between); superlatives 最早 / 最晚 / 最新 /
  最老 / 最年轻 (dates), 最长 / 最短 / 最大 / 最小 / 最高 / 最低 / 最重 / 最贵 … (numbers), "X最多" / "最多X的" /
  最少 (an argmax / argmin over a count, ``counts``; "最多能活" is "at most", not read); answer types 哪些 /
  哪个 / 哪位 / 什么 + noun (a Chinese noun run, cut at its first particle: the planner matches a type name at
  its start), "…的书有哪些" → 书, a final "…的作者" → 作者, 谁 → person, 哪里 → place, 什么时候 → date,
  哪一年 → year, 多久 / 多长 / 多高 … → a number;
- ``spans``: the character spans the cues used, so a planner can mask them when it compares the rest of the
  question with relation names, and ``unused`` can name a cue no plan used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Comparison", "Cues", "Superlative", "read_cues"]


@dataclass(frozen=True)
class Comparison:
    op: Literal["<", "<=", ">", ">=", "=", "between"]
    value: float
    kind: Literal["year", "date", "number"]
    text: str  # the question's words ("before 1900")
    value2: float | None = None
    words: tuple[str, ...] = ()  # the property words next to it ("pages" in "more than 300 pages")
    span: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Superlative:
    direction: Literal["max", "min"]
    kind: Literal["date", "number"]
    text: str  # "oldest"
    words: tuple[str, ...] = ()  # property words it hints ("length", "long")
    span: tuple[int, int] = (0, 0)
    #: "most prizes": an argmax over the number of a relation's values, not over a literal
    counts: bool = False


@dataclass(frozen=True)
class Cues:
    question: str
    count_noun: str | None = None  # "books" in "how many books …"; "" when "how many" has no noun
    comparison: Comparison | None = None
    superlative: Superlative | None = None
    #: the answer kind asked: person, place, date, year, number, or "" (a noun in ``answer_words`` says more)
    answer_kind: str = ""
    #: the noun(s) after which / what ("country", "prize winners")
    answer_words: list[str] = field(default_factory=list)
    #: property words of a number question ("how tall" → height tall)
    value_words: tuple[str, ...] = ()
    spans: list[tuple[int, int]] = field(default_factory=list)

    @property
    def is_count(self) -> bool:
        return self.count_noun is not None

    def masked(self) -> str:
        """The question with the cue words blanked (what is left names relations and topics)."""
        text = self.question
        for start, end in sorted(self.spans, reverse=True):
            text = text[:start] + " " + text[end:]
        return " ".join(text.split())


_YEAR = r"(1[0-9]{3}|20[0-9]{2})"
_CJK_CHAR = re.compile("[\u4e00-\u9fff]")
_NUMBER = r"(\d+(?:[.,]\d+)?)(\s*(?:k|thousand|million|billion|m|km|kg|%))?"
_UNITS = {"k": 1e3, "thousand": 1e3, "million": 1e6, "billion": 1e9, "m": 1e6}

_DECADE = re.compile(r"\b(?:in|during|from)\s+the\s+(1[0-9]{2}0|20[0-9]0)s\b|\b(1[0-9]{2}0|20[0-9]0)s\b", re.I)
_BETWEEN_YEARS = re.compile(rf"\bbetween\s+{_YEAR}\s+and\s+{_YEAR}\b", re.I)
_YEAR_CMP = re.compile(rf"\b(before|after|since|until|till|prior to|earlier than|later than|by|in|during|from)\s+"
                       rf"(?:the\s+year\s+)?{_YEAR}\b(?!\s*(?:pages|people|km|m\b|metres|meters|feet|kg))", re.I)
_NUM_CMP = re.compile(r"\b(more than|greater than|larger than|bigger than|higher than|longer than|taller than|"
                      r"over|above|at least|less than|fewer than|smaller than|lower than|shorter than|under|below|"
                      r"at most|no more than|exactly)\s+" + _NUMBER + r"(?:\s+([a-z]+(?:\s+[a-z]+)?))?", re.I)
_BETWEEN_NUM = re.compile(r"\bbetween\s+" + r"(\d+(?:\.\d+)?)\s+and\s+(\d+(?:\.\d+)?)(?:\s+([a-z]+))?", re.I)
_YEAR_OPS = {"before": "<", "prior to": "<", "earlier than": "<", "until": "<=", "till": "<=", "by": "<=",
             "after": ">", "later than": ">", "since": ">=", "from": ">=", "in": "=", "during": "="}
_NUM_OPS = {"more than": ">", "greater than": ">", "larger than": ">", "bigger than": ">", "higher than": ">",
            "longer than": ">", "taller than": ">", "over": ">", "above": ">", "at least": ">=",
            "less than": "<", "fewer than": "<", "smaller than": "<", "lower than": "<", "shorter than": "<",
            "under": "<", "below": "<", "at most": "<=", "no more than": "<=", "exactly": "="}
#: comparative words that name the property compared ("longer than 100 km" → length)
_COMPARATIVE_WORDS = {"longer": ("length", "long"), "taller": ("height", "tall"), "higher": ("height", "elevation"),
                      "larger": ("area", "size"), "bigger": ("size", "area")}

# superlative word -> (direction, kind, property words)
_SUPERLATIVES: dict[str, tuple[Literal["max", "min"], Literal["date", "number"], tuple[str, ...]]] = {
    "oldest": ("min", "date", ("birth", "born", "founded", "date", "year", "established", "published", "released")),
    "earliest": ("min", "date", ("date", "year", "start")),
    "first": ("min", "date", ("date", "year", "published", "released", "start")),
    "youngest": ("max", "date", ("birth", "born", "date", "year")),
    "newest": ("max", "date", ("date", "year", "published", "released", "founded")),
    "latest": ("max", "date", ("date", "year", "published", "released")),
    "last": ("max", "date", ("date", "year", "published", "released", "end")),
    "most recent": ("max", "date", ("date", "year", "published", "released")),
    "most recently": ("max", "date", ("date", "year", "published", "released")),
    "largest": ("max", "number", ("area", "size", "population", "large")),
    "biggest": ("max", "number", ("size", "area", "population", "big")),
    "longest": ("max", "number", ("length", "long", "pages", "duration", "runtime")),
    "highest": ("max", "number", ("height", "elevation", "high", "altitude")),
    "tallest": ("max", "number", ("height", "tall")),
    "deepest": ("max", "number", ("depth", "deep")),
    "heaviest": ("max", "number", ("weight", "mass")),
    "most populous": ("max", "number", ("population",)),
    "most populated": ("max", "number", ("population",)),
    "richest": ("max", "number", ("wealth", "worth", "revenue", "gdp")),
    "smallest": ("min", "number", ("area", "size", "population", "small")),
    "shortest": ("min", "number", ("length", "short", "pages", "duration", "runtime", "height")),
    "lowest": ("min", "number", ("height", "elevation", "low")),
    "least populous": ("min", "number", ("population",)),
    "lightest": ("min", "number", ("weight", "mass")),
}
_SUPERLATIVE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _SUPERLATIVES), key=len, reverse=True)) + r")\b",
                          re.I)
#: "the most prizes", "the fewest books": an argmax / argmin over a count
_MOST_COUNT = re.compile(r"\b(?:the\s+)?(most|fewest|least)\s+([a-z]+)\b", re.I)
_NOT_COUNTED = frozenset({"populous", "populated", "recent", "recently", "famous", "popular", "common", "important",
                          "of", "the", "a", "an"})

_HOW_MANY = re.compile(r"\b(?:how\s+many|the\s+number\s+of|number\s+of|count\s+of|count\s+the)\b(?:\s+([a-z]+))?",
                       re.I)
_HOW_VALUE = re.compile(r"\bhow\s+(long|tall|high|old|big|large|deep|heavy|far|much)\b", re.I)
_HOW_VALUE_WORDS = {"long": ("length", "long", "duration"), "tall": ("height", "tall"), "high": ("height", "elevation"),
                    "old": ("age", "birth", "born", "founded"), "big": ("size", "area"), "large": ("area", "size"),
                    "deep": ("depth",), "heavy": ("weight", "mass"), "far": ("distance",), "much": ("price", "cost")}
_WHICH = re.compile(r"\b(?:which|what|whose)\s+((?!is\b|are\b|was\b|were\b|did\b|does\b|do\b|has\b|have\b|had\b|"
                    r"can\b|could\b|will\b|would\b|of\b|the\b|a\b|an\b|kind\b|sort\b|type\b)[a-z]+"
                    r"(?:\s+(?!is\b|are\b|was\b|were\b|did\b|does\b|do\b|has\b|have\b|had\b|of\b|by\b|in\b|from\b|"
                    r"for\b|with\b|to\b|on\b|at\b|that\b|who\b)[a-z]+)?)", re.I)
_NOUN_AFTER = re.compile(r"\s+([a-z]+)", re.I)
_NOT_NOUNS = frozenset({"of", "in", "by", "from", "the", "one", "is", "was", "and", "or", "to", "among", "for"})
_KIND_OF = re.compile(r"\b(?:what|which)\s+(?:kind|sort|type)s?\s+of\s+([a-z]+)", re.I)
_WH_KIND = (
    ("year", re.compile(r"\b(what|which|in what)\s+year\b|\bwhen\b.*\b(born|founded|die|died|published|released)\b",
                        re.I)),
    ("date", re.compile(r"\bwhen\b|\bwhat\s+(date|day|time)\b|\bwhich\s+date\b", re.I)),
    ("place", re.compile(r"\bwhere\b", re.I)),
    ("person", re.compile(r"\b(who|whom|whose)\b", re.I)),
)
#: nouns after which / what that say a value kind, not a type
_VALUE_NOUNS = {"year": "year", "date": "date", "day": "date", "decade": "year", "century": "year", "age": "number",
                "population": "number", "height": "number", "length": "number", "number": "number"}


# ---- Chinese ----------------------------------------------------------------------------------------------
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
_ZH_BETWEEN_YEARS = re.compile(rf"{_YEAR}\s*年?\s*(?:到|至|—|-|~)\s*{_YEAR}\s*年(?:之间|间)?")
_ZH_BETWEEN_NUM = re.compile(r"(?:介于)?\s*(\d+(?:\.\d+)?)\s*(?:到|至|和)\s*(\d+(?:\.\d+)?)\s*"
                             rf"([{_CJK}]{{0,3}}?)\s*之间")
_ZH_DECADE = re.compile(r"(1[0-9]{2}0|20[0-9]0)\s*年代")
_ZH_YEAR_CMP = re.compile(rf"(自|从|在|于)?\s*{_YEAR}\s*年\s*(以前|之前|前|以后|之后|后|以来|起|开始)?")
_ZH_YEAR_OPS: dict[str, Literal["<", ">", ">="]] = {"以前": "<", "之前": "<", "前": "<", "以后": ">", "之后": ">", "后": ">", "以来": ">=", "起": ">=",
                "开始": ">="}
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
_ZH_WH_KIND = (
    ("year", re.compile(r"哪一?年|什么年份|何年|哪个年份")),
    ("date", re.compile(r"什么时候|何时|哪一?天|什么日期|几月几")),
    ("place", re.compile(r"哪里|哪儿|在哪|什么地方|何地|何处")),
    ("person", re.compile(r"谁")),
)
_ZH_VALUE_NOUNS = {"年": "year", "年份": "year", "时候": "date", "日期": "date", "天": "date", "里": "place",
                   "儿": "place", "地方": "place"}


def _zh_run(text: str) -> str:
    """A Chinese noun run cut at its first particle ("疾病属于儿科" stays whole; "书的作者" → "书")."""
    cut = re.split(f"[{re.escape(_ZH_STOP)}]", text, maxsplit=1)[0]
    return cut[:6]


def _between(m: re.Match[str], kind: Literal["year", "number"], words: tuple[str, ...] = ()) -> Comparison:
    """``between`` the match's first two numbers, in either order (both readers)."""
    low, high = sorted((float(m.group(1)), float(m.group(2))))
    return Comparison("between", low, kind, m.group(0), value2=high, words=words, span=m.span())


def _decade(m: re.Match[str], start: float) -> Comparison:
    """The ten years from ``start`` (the 1990s, 90年代)."""
    return Comparison("between", start, "year", m.group(0), value2=start + 9, span=m.span())


def _zh_number(text: str, unit: str | None) -> float:
    return float(text) * _ZH_UNITS.get(unit or "", 1.0)


def _zh_comparison(question: str) -> Comparison | None:
    m = _ZH_BETWEEN_YEARS.search(question)
    if m:
        return _between(m, "year")
    m = _ZH_DECADE.search(question)
    if m:
        return _decade(m, float(m.group(1)))
    m = _ZH_BETWEEN_NUM.search(question)
    if m:
        return _between(m, "number", (m.group(3),) if m.group(3) else ())
    m = _ZH_NUM_CMP.search(question)
    if m:
        unit_word = _zh_run(m.group(4) or "")
        end = m.start(4) + len(unit_word) if m.group(4) else m.end()
        is_year = re.fullmatch(_YEAR, m.group(2)) is not None and unit_word.startswith("年")
        words = () if is_year or not unit_word else (unit_word,)
        return Comparison(_ZH_NUM_OPS[m.group(1)], _zh_number(m.group(2), m.group(3)), "year" if is_year else "number",
                          question[m.start():end], words=words, span=(m.start(), end))
    m = _ZH_NUM_AFTER.search(question)
    if m:
        word = m.group(3) or ""
        is_year = re.fullmatch(_YEAR, m.group(1)) is not None and word.startswith("年")
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


def _zh_superlative(question: str) -> Superlative | None:
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


def _zh_answer(text: str, superlative: Superlative | None, cue_spans: list[tuple[int, int]]
               ) -> tuple[str, list[str], tuple[str, ...], tuple[int, int] | None]:
    """``(answer kind, answer words, value words, the span of a value cue)`` of a Chinese question."""
    for kind, pattern in _ZH_WH_KIND:
        if pattern.search(text):
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


def _read_zh(text: str) -> Cues:
    """:func:`read_cues` for a question in Chinese (the same structure as for English)."""
    spans: list[tuple[int, int]] = []
    count_noun: str | None = None
    m = _ZH_COUNT.search(text)
    if m:
        count_noun = _zh_run(m.group(3) or "")
        spans.append(m.span(0) if not m.group(3) else (m.start(), m.start(3)))
    comparison = _zh_comparison(text)
    if comparison is not None:
        spans.append(comparison.span)
    superlative = _zh_superlative(text)
    if superlative is not None:
        spans.append(superlative.span)
    answer_kind, answer_words, value_words, value_span = ("", [], (), None)
    if count_noun is None:
        answer_kind, answer_words, value_words, value_span = _zh_answer(text, superlative, spans)
        if value_span is not None:
            spans.append(value_span)
    elif count_noun:
        answer_words = [count_noun]
    return Cues(text, count_noun, comparison, superlative, answer_kind, answer_words, value_words, spans)


def _number(text: str, unit: str | None) -> float:
    value = float(text.replace(",", ""))
    return value * _UNITS.get((unit or "").strip().lower(), 1.0)


def _comparison(question: str) -> Comparison | None:
    m = _BETWEEN_YEARS.search(question)
    if m:
        return _between(m, "year")
    m = _DECADE.search(question)
    if m:
        return _decade(m, float(m.group(1) or m.group(2)))
    m = _BETWEEN_NUM.search(question)
    if m:
        return _between(m, "number", (m.group(3).lower(),) if m.group(3) else ())
    m = _NUM_CMP.search(question)
    if m:
        op_text = m.group(1).lower()
        noun = (m.group(4) or "").lower()
        words = tuple(w for w in noun.split() if w not in ("the", "a", "an", "and", "or")) + tuple(
            _COMPARATIVE_WORDS.get(op_text.split()[0], ()))
        value = _number(m.group(2), m.group(3))
        is_year = re.fullmatch(_YEAR, m.group(2)) is not None and not words
        return Comparison(_NUM_OPS[op_text], value, "year" if is_year else "number", m.group(0).strip(),
                          words=words, span=m.span())
    m = _YEAR_CMP.search(question)
    if m:
        return Comparison(_YEAR_OPS[m.group(1).lower()], float(m.group(2)), "year", m.group(0), span=m.span())
    return None


def _superlative(question: str) -> Superlative | None:
    for m in _MOST_COUNT.finditer(question):
        noun = m.group(2).lower()
        if noun not in _NOT_COUNTED and f"{m.group(1)} {noun}".lower() not in _SUPERLATIVES:
            direction: Literal["max", "min"] = "max" if m.group(1).lower() == "most" else "min"
            return Superlative(direction, "number", m.group(0), (noun,), m.span(), counts=True)
    m = _SUPERLATIVE.search(question)
    if m is None:
        return None
    direction, kind, words = _SUPERLATIVES[m.group(1).lower()]
    return Superlative(direction, kind, m.group(0), words, m.span())


def read_cues(question: str) -> Cues:
    """The question's structure words (see the module docstring); never raises."""
    text = question or ""
    if _CJK_CHAR.search(text):
        return _read_zh(text)
    spans: list[tuple[int, int]] = []
    count_noun: str | None = None
    m = _HOW_MANY.search(text)
    if m:
        count_noun = (m.group(1) or "").lower()
        spans.append((m.start(), m.start(1) if m.group(1) else m.end()))
    comparison = _comparison(text)
    if comparison is not None:
        spans.append(comparison.span)
    superlative = _superlative(text)
    if superlative is not None:
        spans.append(superlative.span)
    answer_words: list[str] = []
    answer_kind = ""
    value_words: tuple[str, ...] = ()
    how = _HOW_VALUE.search(text)
    if how is not None and count_noun is None:
        answer_kind = "number"
        value_words = _HOW_VALUE_WORDS[how.group(1).lower()]
        spans.append(how.span())
    kind_of = _KIND_OF.search(text)
    which = kind_of or _WHICH.search(text)
    if which is not None and not answer_kind:
        noun_phrase = which.group(1).lower()
        head = noun_phrase.split()[0]
        if head in _VALUE_NOUNS:
            answer_kind = _VALUE_NOUNS[head]
        else:
            answer_words = noun_phrase.split()
    if not answer_kind and not answer_words:
        answer_kind = next((kind for kind, pattern in _WH_KIND if pattern.search(text)), "")
    if superlative is not None and not answer_words and not superlative.counts:
        after = _NOUN_AFTER.match(text, superlative.span[1])
        if after is not None and after.group(1).lower() not in _NOT_NOUNS:
            answer_words = [after.group(1).lower()]
    if count_noun:
        answer_words = answer_words or [count_noun]
    return Cues(text, count_noun, comparison, superlative, answer_kind, answer_words, value_words, spans)
