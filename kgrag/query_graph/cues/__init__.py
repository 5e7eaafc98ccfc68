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

Layout: the values read (:class:`Cues`, :class:`Comparison`, :class:`Superlative`) live in :mod:`.model`, the
English tables and reader in :mod:`.english`, the Chinese ones in :mod:`.chinese`; the wh-word → answer-kind
tables both readers fall back on are :data:`kgrag.text.PLANNER_KINDS` / :data:`kgrag.text.PLANNER_KINDS_ZH`.
"""

from __future__ import annotations

import re

from kgrag.query_graph.cues import chinese, english
from kgrag.query_graph.cues.model import Comparison, Cues, Superlative

__all__ = ["Comparison", "Cues", "Superlative", "read_cues"]

_CJK_CHAR = re.compile("[\u4e00-\u9fff]")


def read_cues(question: str) -> Cues:
    """The question's structure words (see the module docstring); a question holding a CJK character is read as
    Chinese, any other as English; never raises."""
    text = question or ""
    return chinese.read(text) if _CJK_CHAR.search(text) else english.read(text)
