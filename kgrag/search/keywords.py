"""Stage 1 of contextual recall: split a question into entity keywords, attribute-value conditions and relation
words (spec contextual-recall.md, the specification of recalling how a question's words are stored, §3.2
阶段1), for Chinese and English, without an LLM.

    lexicon = Lexicon.from_network(network, store.instance_names(kn_id))
    extraction = extract_keywords("上气道梗阻有哪些症状", lexicon)
    # entities: 上气道梗阻 (0.6, not a stored name) · relation_words: 症状 -> has_symptom

How (one pass, in this order):
1. **Attribute conditions** by pattern, removed from the text: ``年龄大于30岁`` / ``30岁以上`` / ``30到40岁`` /
   ``age > 30`` / ``older than 30`` -> attribute words, comparator, number, unit; categorical values from a small
   bilingual synonym table (男性 / male / 女 …) -> ``==`` conditions.
2. **Segmentation** with jieba; question words and function words (有哪些, 什么, 的, what, which …) split the text
   into chunks. A function character jieba's HMM glued to the end of an unknown word (原醛症有哪些: 症有) is split
   off first.
3. **Relation words**: a token equal to, or (2+ chars) contained in, a relation type's name, or one of the words
   of its comment, or an object type's name, is a relation/schema word (its relation types are listed).
4. **Entities**: every remaining chunk. A chunk that is a stored instance name is one entity
   (``in_dictionary``, confidence 0.9); a chunk covered exactly by 2+ stored names (头痛发热) becomes those names;
   anything else stays whole (confidence 0.6) — it is the user's form of a name the later stages look up, so it
   is never cut into dictionary pieces (上气道梗阻 must not become 气道梗阻 + 上).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from kgrag.network.schema.model import KnowledgeNetwork
from kgrag.rank.tokenize import has_cjk, is_word, tokenize
from kgrag.search.context_models import AttributeCondition, EntityKeyword, Extraction, RelationWord

__all__ = ["CATEGORICAL_SYNONYMS", "Lexicon", "extract_attribute_conditions", "extract_keywords"]

#: question words and function words: they separate keywords and are never keywords themselves
STOPWORDS = frozenset(
    ["的", "了", "吗", "呢", "吧", "啊", "呀", "和", "与", "及", "或", "或者", "跟", "同", "以及", "有", "是", "在", "为", "被", "把", "让", "给", "对", "从", "向", "于", "就", "都", "也", "还", "又", "而", "并", "哪些", "哪个", "哪种", "哪", "什么", "啥", "怎么", "怎样", "怎么样", "如何", "为什么", "多少", "几", "几个", "是否", "能否", "可以", "能", "会", "要", "应该", "应当", "需要", "需", "得", "该", "请问", "请", "帮", "我", "我们", "你", "你们", "他", "她", "它", "他们", "想", "想要", "知道", "告诉", "一下", "一些", "一个", "些", "个", "所有", "全部", "各种", "主要", "常见", "通常", "一般", "可能", "具体", "相关", "关于", "其", "其他", "以上", "以下", "之间", "之类", "等", "等等", "用", "做", "吃", "看", "查", "查询", "列出", "列举", "找", "找出", "显示", "给出", "有没有", "是不是", "还有", "就是", "这", "那", "这个", "那个", "这些", "那些", "人", "者", "患者", "病人", "病", "药", "东西", "情况", "方面", "时候", "时", "后", "前", "怎么办", "怎么回事", "什么样", "哪里", "哪儿", "多久", "多长时间", "为啥", "咋办", "咋", "呢", "a", "an", "the", "of", "to", "in", "on", "for", "with", "by", "from", "at", "as", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "list", "show", "give", "find", "tell", "me", "please", "all", "any", "some", "and", "or", "not", "no", "that", "this", "these", "those", "it", "its", "has", "have", "had", "can", "could", "should", "would", "will", "may", "might", "there", "their", "them", "they"]
)

#: categorical values users write in their own words (key: canonical; values: the forms to look for in data)
CATEGORICAL_SYNONYMS: dict[str, tuple[str, ...]] = {
    "male": ("男", "男性", "男士", "男生", "男人", "male", "m", "man", "men", "先生"),
    "female": ("女", "女性", "女士", "女生", "女人", "female", "f", "woman", "women"),
    "yes": ("是", "有", "yes", "true", "y", "1"),
    "no": ("否", "无", "没有", "no", "false", "n", "0"),
}
_CATEGORICAL_WORDS = {
    form: canonical for canonical, forms in CATEGORICAL_SYNONYMS.items() if canonical in ("male", "female")
    for form in forms if len(form) > 1 or not form.isascii()
}

_UNITS = (
    "周岁|岁|年|个月|月|周|天|日|小时|分钟|秒|元|块|万元|万|千克|公斤|kg|斤|克|g|毫克|mg|毫升|ml|升|l|厘米|cm|毫米|mm|米|m|"
    "公里|km|次|个|人|%|％|度|℃"
)
_NUM = r"-?\d+(?:\.\d+)?"
_ATTR = r"(?P<attr>[\u4e00-\u9fffA-Za-z_]{1,10}?)"
_CMP_ZH = {
    "大于等于": ">=", "小于等于": "<=", "不低于": ">=", "不高于": "<=", "不少于": ">=", "不多于": "<=",
    "不超过": "<=", "不小于": ">=", "不大于": "<=", "至少": ">=", "至多": "<=", "最少": ">=", "最多": "<=",
    "大于": ">", "小于": "<", "高于": ">", "低于": "<", "超过": ">", "多于": ">", "少于": "<", "等于": "==",
    "为": "==", "是": "==", ">=": ">=", "<=": "<=", "≥": ">=", "≤": "<=", ">": ">", "<": "<", "=": "==",
    "==": "==", "!=": "!=", "不等于": "!=",
    "more than": ">", "greater than": ">", "older than": ">", "over": ">", "above": ">", "at least": ">=",
    "less than": "<", "younger than": "<", "under": "<", "below": "<", "at most": "<=", "equal to": "==",
    "equals": "==",
}
_CMP = "|".join(sorted((re.escape(k) for k in _CMP_ZH), key=len, reverse=True))
_SUFFIX_CMP = {"以上": ">=", "之上": ">=", "及以上": ">=", "以下": "<=", "之下": "<=", "及以下": "<=", "以内": "<=",
               "+": ">="}
_PATTERNS = [
    # 30到40岁 / 30-40岁 / between 30 and 40
    ("range", re.compile(
        rf"{_ATTR}?\s*(?:在)?\s*(?P<low>{_NUM})\s*(?P<unit1>{_UNITS})?\s*(?:到|至|-|~|～|—)\s*(?P<high>{_NUM})\s*"
        rf"(?P<unit>{_UNITS})?\s*(?:之间)?", re.IGNORECASE)),
    ("range", re.compile(
        rf"{_ATTR}?\s*between\s+(?P<low>{_NUM})\s*(?:and|to)\s*(?P<high>{_NUM})\s*(?P<unit>{_UNITS})?",
        re.IGNORECASE)),
    # 年龄大于30岁 / age > 30 / older than 30
    ("cmp", re.compile(rf"{_ATTR}?\s*(?P<op>{_CMP})\s*(?P<num>{_NUM})\s*(?P<unit>{_UNITS})?", re.IGNORECASE)),
    # 30岁以上 / 年龄30岁以下
    ("suffix", re.compile(
        rf"{_ATTR}?\s*(?P<num>{_NUM})\s*(?P<unit>{_UNITS})?\s*(?P<suffix>及以上|及以下|以上|之上|以下|之下|以内|\+)",
        re.IGNORECASE)),
    # 年龄30岁 / 30岁的 (a number with a unit: equality)
    ("eq", re.compile(rf"{_ATTR}?\s*(?P<num>{_NUM})\s*(?P<unit>{_UNITS})(?![\dA-Za-z])", re.IGNORECASE)),
]
_SPLIT = re.compile(r"[,，。;；:：!！?？、/|()（）\[\]【】\"'“”‘’<>《》]+|\.(?!\d)|\s+(?=[^\x00-\x7f])|(?<=[^\x00-\x7f])\s+")


_WORD_START = re.compile(r"\b[0-9a-z]")
_ASCII_WORD = re.compile(r"[0-9a-z]+(?:['’]s)?")
#: a partial name (a surname, a word of a title) is a word of at least this many characters of at most this many names
MIN_PARTIAL_CHARS = 4
MAX_PARTIAL_OWNERS = 5
_WORD_END = re.compile(r"[0-9a-z]\b")


@dataclass
class Lexicon:
    """What stage 1 knows about one network: stored instance names and the schema's words."""

    names: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # name -> [(type id, instance id)]
    ascii_names: dict[str, str] = field(default_factory=dict)  # lower-cased ASCII name -> the stored name
    #: stored names the segmenter would cut (they hold punctuation or spaces), longest first
    punctuated: list[str] = field(default_factory=list)
    max_name_length: int = 0
    relation_words: dict[str, set[str]] = field(default_factory=dict)  # word -> relation type ids
    type_words: dict[str, str] = field(default_factory=dict)  # object type name -> type id
    #: word of a many-word ASCII name (lower-cased) -> the stored names holding it (built on first use)
    _partials: dict[str, list[str]] | None = field(default=None, repr=False)

    @classmethod
    def from_network(cls, network: KnowledgeNetwork, names: Iterable[tuple[str, str, str]]) -> Lexicon:
        lex = cls()
        for type_id, instance_id, name in names:
            name = str(name).strip()
            if len(name) >= 2:
                lex.names.setdefault(name, []).append((type_id, instance_id))
                if name.isascii():
                    lex.ascii_names.setdefault(name.lower(), name)
        lex.max_name_length = max((len(n) for n in lex.names), default=0)
        lex.punctuated = sorted((n for n in lex.names if _SPLIT.search(n)), key=lambda n: (-len(n), n))
        for rt in network.relation_types:
            for word in _schema_words(rt.name, rt.comment):
                lex.relation_words.setdefault(word, set()).add(rt.id)
        for ot in network.object_types:
            if ot.name.strip():
                lex.type_words[ot.name.strip()] = ot.id
        return lex

    def name_spans(self, text: str) -> list[tuple[int, int]]:
        """Maximal spans ``(start, end)`` of ``text`` that are stored names, by position (longest at each start;
        spans inside a longer one dropped)."""
        spans: list[tuple[int, int]] = []
        n = len(text)
        for i in range(n):
            for j in range(min(n, i + self.max_name_length), i + 1, -1):  # longest first: maximal at i
                if text[i:j] in self.names:
                    spans.append((i, j))
                    break
        return [(i, j) for i, j in spans if not any(a <= i and j <= b and (a, b) != (i, j) for a, b in spans)]

    def folded_spans(self, text: str) -> list[tuple[int, int, str]]:
        """Spans ``(start, end, stored name)`` of ``text`` that are stored ASCII names said in another case or in
        the plural (``film directors`` -> ``Film Director``), on word boundaries; the longest at each start."""
        if not self.ascii_names:
            return []
        low = text.lower()
        starts = [m.start() for m in _WORD_START.finditer(low)]
        out: list[tuple[int, int, str]] = []
        for i in starts:
            ends = [m.end() for m in _WORD_END.finditer(low, i, min(len(low), i + self.max_name_length + 2))]
            for j in reversed(ends):
                piece = low[i:j]
                stored = self.ascii_names.get(piece)
                if stored is None:
                    for suffix in ("es", "s"):
                        if piece.endswith(suffix) and (stored := self.ascii_names.get(piece[: -len(suffix)])):
                            break
                if stored is not None and len(stored) >= 3:
                    out.append((i, j, stored))
                    break
        return [(i, j, n) for i, j, n in out if not any(a <= i and j <= b and (a, b) != (i, j) for a, b, _ in out)]

    def _partial_index(self) -> dict[str, list[str]]:
        if self._partials is None:
            index: dict[str, list[str]] = {}
            schema = {w.lower() for w in (*self.relation_words, *self.type_words)}
            for low, stored in self.ascii_names.items():
                words = _ASCII_WORD.findall(low)
                if len(words) < 2:
                    continue
                for word in dict.fromkeys(words):
                    if len(word) >= MIN_PARTIAL_CHARS and word not in STOPWORDS and word not in schema \
                            and word.removesuffix("s") not in schema and not word.isdigit():
                        index.setdefault(word, []).append(stored)
            self._partials = {w: sorted(names, key=lambda n: (len(n), n))
                              for w, names in index.items() if len(names) <= MAX_PARTIAL_OWNERS}
        return self._partials

    def partial_spans(self, text: str) -> list[tuple[int, int, str]]:
        """Words of ``text`` that are one word of a many-word stored ASCII name — a surname or a part of a title,
        in any case, a possessive's ``'s`` and a plural ``s`` looked through (``orwell's`` -> ``George Orwell``):
        ``(start, end, stored name)``, the shorter names first where a word is in several (at most
        :data:`MAX_PARTIAL_OWNERS`; a word in more names says nothing)."""
        if not self.ascii_names:
            return []
        index = self._partial_index()
        out: list[tuple[int, int, str]] = []
        for m in _ASCII_WORD.finditer(text.lower()):
            word = m.group()
            for form in (word, word[:-2] if word.endswith("'s") or word.endswith("’s") else "",
                         word[:-1] if word.endswith("s") else ""):
                if form and form in index:
                    out.extend((m.start(), m.start() + len(form), stored) for stored in index[form])
                    break
        return out

    def relation_ids(self, token: str) -> set[str]:
        """Relation types a token names: equal to a schema word, or (2+ chars) inside one."""
        found = set(self.relation_words.get(token, ()))
        if len(token) >= 2 and not found:
            for word, ids in self.relation_words.items():
                if len(word) >= 2 and (token in word or (len(word) >= 2 and word in token and len(word) * 2 >= len(token))):
                    found |= ids
        return found


def _schema_words(name: str, comment: str) -> set[str]:
    """The words a relation type is called by: its name, its name's tokens, and its comment's content tokens."""
    words = {name.strip()} if name.strip() else set()
    for text in (name, comment):
        for tok in tokenize(text):
            if len(tok) >= 2 and tok not in STOPWORDS and not tok.isdigit():
                words.add(tok)
    return words


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


def _clean_attr(attr: str | None) -> str | None:
    if not attr:
        return None
    attr = attr.strip()
    for stop in ("的", "是", "在", "为"):
        attr = attr.removesuffix(stop)
    return attr if attr and attr.lower() not in STOPWORDS else None


def extract_attribute_conditions(text: str) -> tuple[list[AttributeCondition], str]:
    """The numeric and categorical conditions in ``text`` and the text with them blanked out."""
    found: list[AttributeCondition] = []
    rest = text
    for kind, pattern in _PATTERNS:
        while True:
            m = pattern.search(rest)
            if m is None:
                break
            groups = m.groupdict()
            unit = groups.get("unit") or groups.get("unit1")
            attr = _clean_attr(groups.get("attr"))
            if kind == "range":
                op, value = "range", [_number(groups["low"]), _number(groups["high"])]
            elif kind == "cmp":
                op, value = _CMP_ZH.get(groups["op"].lower(), _CMP_ZH.get(groups["op"], "==")), _number(groups["num"])
            elif kind == "suffix":
                op, value = _SUFFIX_CMP[groups["suffix"]], _number(groups["num"])
            else:
                op, value = "==", _number(groups["num"])
            found.append(AttributeCondition(text=m.group(0).strip(), attribute=attr, operation=op, value=value,
                                            unit=unit, confidence=0.9 if attr or unit else 0.7))
            rest = rest[: m.start()] + " " + rest[m.end():]
    for form in sorted(_CATEGORICAL_WORDS, key=lambda f: -len(f)):
        pattern = re.compile(rf"(?<![A-Za-z]){re.escape(form)}(?![A-Za-z])", re.IGNORECASE)
        m = pattern.search(rest)
        if m is not None:
            found.append(AttributeCondition(text=m.group(0), attribute=None, operation="==", value=m.group(0),
                                            confidence=0.7))
            rest = rest[: m.start()] + " " + rest[m.end():]
    return found, rest


def _cover(chunk: str, lexicon: Lexicon) -> list[str] | None:
    """``chunk`` as a concatenation of 2+ stored names (fewest pieces), or None."""
    n = len(chunk)
    best: list[list[str] | None] = [None] * (n + 1)
    best[0] = []
    for end in range(1, n + 1):
        for start in range(max(0, end - lexicon.max_name_length), end - 1):
            piece = chunk[start:end]
            prev = best[start]
            if prev is not None and piece in lexicon.names and (best[end] is None or len(prev) + 1 < len(best[end])):
                best[end] = [*prev, piece]
    pieces = best[n]
    return pieces if pieces is not None and len(pieces) >= 2 else None


def extract_keywords(question: str, lexicon: Lexicon) -> Extraction:
    """Stage 1 without an LLM (see the module docstring)."""
    entities: list[EntityKeyword] = []
    for name in lexicon.punctuated:  # a stored name with punctuation, verbatim in the question: keep it whole
        if len(name) >= 3 and name in question:
            entities.append(EntityKeyword(text=name, confidence=0.9, in_dictionary=True))
            question = question.replace(name, " ")
    attributes, rest = extract_attribute_conditions(question)
    relations: dict[str, RelationWord] = {}
    for segment in _SPLIT.split(rest):
        if not segment:
            continue
        if segment in lexicon.names:  # a stored name as a whole: never cut by the tokenizer
            entities.append(EntityKeyword(text=segment, confidence=0.9, in_dictionary=True))
            continue
        chunk: list[str] = []
        for token, glued in _tokens(segment):
            low = token.lower()
            rel_ids = set() if token in lexicon.names or glued else lexicon.relation_ids(token)
            if not glued and (low in STOPWORDS or rel_ids or token in lexicon.type_words):
                _flush(chunk, entities, lexicon)
                chunk = []
                if rel_ids or token in lexicon.type_words:
                    word = relations.setdefault(token, RelationWord(text=token, confidence=0.9 if rel_ids else 0.6))
                    word.relation_type_ids = sorted(set(word.relation_type_ids) | rel_ids)
                continue
            chunk.append(token)
        _flush(chunk, entities, lexicon)
    unique: dict[str, EntityKeyword] = {}
    for entity in entities:
        unique.setdefault(entity.text, entity)
    return Extraction(entities=list(unique.values()), attribute_values=attributes,
                      relation_words=list(relations.values()), source="rules")


def _tokens(segment: str) -> list[tuple[str, bool]]:
    """jieba tokens of a segment, original case kept (``tokenize`` lower-cases ASCII), a function character that
    jieba's HMM glued to an unknown word split off (原醛症有哪些症状: 症有 -> 症 + 有). ``(token, glued)``:
    ``glued`` marks the rest of such a token — part of a name, never a stop word or schema word (Ollier病有: 病)."""
    out: list[tuple[str, bool]] = []
    pos = 0
    lower = segment.lower()
    for tok in tokenize(segment):
        at = lower.find(tok, pos)
        if at < 0:
            out.extend(_unglue(tok))
            continue
        out.extend(_unglue(segment[at : at + len(tok)]))
        pos = at + len(tok)
    return out


#: function characters jieba's HMM may glue to the end of an unknown word (X有哪些: 病有)
_GLUED = frozenset("有是的在和与及或")


def _unglue(token: str) -> list[tuple[str, bool]]:
    """``token`` without a trailing function character when it is no dictionary word (an HMM artefact)."""
    if len(token) >= 2 and token[-1] in _GLUED and has_cjk(token[:-1]) and not is_word(token):
        return [(token[:-1], True), (token[-1], False)]
    return [(token, False)]


def _flush(chunk: list[str], entities: list[EntityKeyword], lexicon: Lexicon) -> None:
    if not chunk:
        return
    if all(tok.isascii() for tok in chunk):
        _flush_ascii(chunk, entities, lexicon)
        return
    joiner = ""
    text = joiner.join(chunk).strip()
    if len(text) < 2 and not text.isascii():
        return  # one stray CJK character is not a keyword
    if text in lexicon.names:
        entities.append(EntityKeyword(text=text, confidence=0.9, in_dictionary=True))
        return
    pieces = _cover(text, lexicon)
    if pieces:
        entities.extend(EntityKeyword(text=p, confidence=0.8, in_dictionary=True) for p in pieces)
        return
    entities.append(EntityKeyword(text=text, confidence=0.6))


def _flush_ascii(words: list[str], entities: list[EntityKeyword], lexicon: Lexicon) -> None:
    """English words: the longest runs that are stored names (case-insensitive) are entities; the words between
    them form one keyword per run."""
    i, pending = 0, []
    while i < len(words):
        for j in range(len(words), i, -1):
            stored = lexicon.ascii_names.get(" ".join(words[i:j]).lower())
            if stored is not None:
                if pending:
                    entities.append(EntityKeyword(text=" ".join(pending), confidence=0.6))
                    pending = []
                entities.append(EntityKeyword(text=stored, confidence=0.9, in_dictionary=True))
                i = j
                break
        else:
            pending.append(words[i])
            i += 1
    if pending and (len(pending) > 1 or len(pending[0]) > 1):
        entities.append(EntityKeyword(text=" ".join(pending), confidence=0.6))
