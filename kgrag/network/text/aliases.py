"""Other names of a thing, read from free text: 又称/又名/俗称/简称/亦称/也称/别称/别名/旧称/通称/又叫/也叫/俗名/
学名/或称 … statements and bracketed forms such as ``心肌梗死（简称心梗）``.

    extract_aliases("过敏性紫癜", ["过敏性紫癜又称出血性毛细血管中毒症，是一种……"])  # ['出血性毛细血管中毒症']
    alias_index([("心肌梗死", []), ("心绞痛", ["心绞痛可进展为心肌梗死（简称心梗）。"])])  # {'心肌梗死': ['心梗']}

Contract:

* A *statement* is one pattern word inside one sentence (sentences end at 。！？；; or a line break). The names
  it gives follow the pattern (an optional 为/作/之为/: after it): quoted (“…”, 「…」, "…", ‘…’, 『…』, each
  quote's content split at 、/，/或/和/及/与) or bare runs of text, separated by 、, 或, 或者 — by 和/及/与/以及
  only when the parts are names ending alike or all 4+ characters without 的 (脂肪和碳水化合物诱导的高脂血症 stays
  one name) — or by ，when the next piece is a short name (at most :data:`COMMA_NAME_CHARS` characters, no verb
  or function word, sharing its last character or a character bigram with a name already read: 紫绀，发绀)
  ending at a separator or the sentence end. A bracketed gloss after or inside a name (``(Stroke)``,
  ``麸质(gluten)过敏性肠病``) is skipped.
  Names are cleaned (quotes, brackets, glosses, surrounding punctuation, spaces between Chinese characters) and
  kept only when they hold two Chinese characters (or one in 3+ characters: Wilson病), are at most
  :data:`MAX_ALIAS_CHARS` characters long, hold no verb/function word that makes a clause of them (是, 为, 引起
  …), do not end in 性/型 (an adjective whose head was left out) and are neither generic words (:data:`GENERIC`:
  本病, 后者 …) nor demonstratives (此种贫血).
* The *subject* of a statement is the clause right before the pattern (brackets removed, adverbs such as
  故/因此/临床上/俗 stripped, then the text after the last ，：、; leading connectives such as 所谓/患 dropped), or,
  for a pattern inside brackets, the clause before the opening bracket (``心肌梗死（acute myocardial
  infarction，简称心梗）``). When that clause is empty (``……，又称X``) the clause before the comma is used when it
  is a bare name, else the sentence's subject (its first clause, cut before 是/为/系/指), and for a sentence
  opening with the pattern (``……。又称X，简称Y``) the previous sentence's subject.
* A statement's names are attributed to a stored name when its subject is that name exactly (a subject borrowed
  from another clause or sentence: only when it is the record's own name); for a bracketed gloss also to the
  longest stored name ending the subject clause right after a function character (进展为心肌梗死（简称心梗）, not
  ……的肺气肿（也称……）). In the record's own texts also when the subject is a pronoun (本病, 该病, 本征, 它 …) or
  a near variant of its own name (character ratio ≥ :data:`OWN_VARIANT_RATIO`, or its name without a
  小儿/老年人/妊娠合并 … qualifier: 小儿X's text speaks of X) that is neither its name cut short (肩峰下滑囊 for
  肩峰下滑囊炎: the organ) or extended, nor its name with words inserted (急性X: a kind of X); the variant
  itself is then an alias too. Symmetrically, when the subject is a clean name that is not stored and the first
  name given is a stored name, the subject and the other names are attributed to that stored name
  (``胆碱性荨麻疹又称胆碱能性荨麻疹``).
* Results are deduplicated in order of appearance; the thing's own name (ignoring punctuation and case) is
  never its alias.

:func:`extract_aliases` reads one thing's texts; :func:`alias_index` reads every record's texts and attributes
each statement to whichever record (or extra stored name) its subject names, so a sentence in disease A's
text can give disease B's other name. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import SequenceMatcher
from typing import NamedTuple

from kgrag.text import fold_alias

__all__ = [
    "ALIAS_PATTERNS",
    "GENERIC",
    "MAX_ALIAS_CHARS",
    "Statement",
    "alias_index",
    "clean_alias",
    "extract_aliases",
    "statements",
]

#: the longest alias kept (characters)
MAX_ALIAS_CHARS = 15
#: the longest name accepted after a ， in a list of names (longer pieces are a new clause)
COMMA_NAME_CHARS = 8
#: the character ratio a subject needs to count as a variant of the text's own name
OWN_VARIANT_RATIO = 0.8

#: the pattern words (longest first, so 又称为 is read as 又称 + 为 and 又被称为 as one pattern)
ALIAS_PATTERNS = (
    "又被称为", "也被称为", "亦被称为", "又被称作", "也被称作",
    "又称", "又名", "俗称", "简称", "亦称", "也称", "别称", "别名", "旧称", "通称", "又叫", "也叫", "俗名",
    "学名", "或称", "亦名", "俗叫",
)
#: contexts where a pattern's characters are part of another word (分别称为, 医学名称, 普通称)
_NOT_A_PATTERN = {"别称": "(?<!分)", "别名": "(?<!分)", "学名": "(?<![医科化数文])", "通称": "(?<!普)"}
_PATTERN_RE = re.compile("|".join(
    _NOT_A_PATTERN.get(p, "") + re.escape(p) + ("(?![词称])" if p == "学名" else "")
    for p in sorted(ALIAS_PATTERNS, key=len, reverse=True)))
#: what may follow a pattern before the names (又称为 / 也称之为 / 别名：)
_AFTER_PATTERN = re.compile(r"^(?:之为|作为|为|作|做|是)?\s*[:：]?\s*(?:的(?=[“「\"'‘『]))?")

#: generic words that are never a name of their own
GENERIC = frozenset({
    "本病", "该病", "此病", "本症", "该症", "此症", "本征", "该征", "此征", "本综合征", "该综合征", "此综合征",
    "这种病", "这种疾病", "该疾病", "本疾病", "此疾病", "疾病", "病", "其", "它", "病症", "病证", "综合征", "症",
    "本型", "该型", "此型", "本瘤", "该瘤", "此瘤", "肿瘤", "炎症", "感染", "该病变", "本病变", "病变",
    "前者", "后者", "两者", "二者", "其中", "此时", "这时", "人们", "患者", "病人", "小儿", "儿童", "成人", "老人",
    "中医", "西医", "临床", "临床上", "医学上", "俗语", "民间",
})
#: pronouns that stand for the thing whose text it is
PRONOUNS = frozenset({
    "本病", "该病", "此病", "本症", "该症", "此症", "本征", "该征", "此征", "本综合征", "该综合征", "此综合征",
    "这种病", "这种疾病", "该疾病", "本疾病", "此疾病", "本瘤", "该瘤", "此瘤", "本病变", "该病变", "其", "它",
})
#: qualifiers of a record's name that its text may leave out (小儿X's text speaks of X)
_OWN_PREFIXES = ("小儿", "儿童", "新生儿", "婴儿", "婴幼儿", "老年人", "老年", "成人", "妊娠合并", "妊娠期")

_OPEN = "(（[【"
_CLOSE = ")）]】"
_QUOTES = {"“": "”", "「": "」", "『": "』", '"': '"', "‘": "’", "'": "'", "《": "》"}
_SENTENCE_END = re.compile(r"[。！？!?；;\n]")
_BRACKETED = re.compile(r"[(（\[【][^()（）\[\]【】]*[)）\]】]")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_LATIN_ONLY = re.compile(r"^[\sA-Za-z0-9.\-+'’/·,]+$")
#: characters/words that make a piece of text a clause rather than a name
_CLAUSE_WORDS = re.compile(r"包括|包含|见于|少见|多见|较|是|为|的|了|在|可|把|被|将|从|对|即|因|而|所|其|以|由|系|指|等|均|都|也|亦|又|主要|常|则|并|到")
#: looser check for names right after the pattern (names may hold 于/在… less often, but not 是/为/的/了)
_NAME_BREAKERS = re.compile(
    r"是|为|了|称|叫|可以|引起|导致|造成|形成|表现|发生|出现|常见|属于|主要|包括|伴有|患有|进行|使用|我国|国内|国外")
#: words stripped from the end of a subject clause (故又称 / 临床上也称 / 俗 …)
_TRAILING_ADVERBS = (
    "临床上", "医学上", "习惯上", "民间", "中医学", "中医", "西医", "国内", "国外", "过去", "以往", "以前", "现在",
    "目前", "通常", "一般", "常常", "因此", "所以", "因而", "故而", "人们", "有人", "有的", "亦可", "也可", "所谓",
    "现", "故", "常", "也", "亦", "又", "还", "曾", "则", "即", "可", "统", "俗", "旧", "今", "因", "多", "被",
)
#: words stripped from the start of a subject clause
_LEADING_WORDS = (
    "所谓的", "所谓", "其中", "另外", "此外", "因此", "所以", "而且", "但是", "临床上", "医学上", "目前", "现在",
    "通常", "一般", "罹患", "患有", "伴有", "合并", "出现", "引起", "导致", "如", "即", "而", "但", "故", "其", "患",
    "伴",
)
_ENUMERATION = re.compile(
    r"^(?:[①-⑳]|[(（]\s*[0-9一二三四五六七八九十]{1,3}\s*[)）]|[0-9]{1,2}\s*[.．、)）]|[一二三四五六七八九十]{1,3}\s*[、.．]|"
    r"[A-Za-z]\s*[.．、)）])\s*"
)
#: names that point at something rather than name it (此种贫血, 该类疾病)
_DEMONSTRATIVE = re.compile(r"^(?:此|该|本|这|那|上述|下述|前述)(?:种|类|些|个|组)")
_TRAILING_GLOSS = re.compile(r"(?<=[\u4e00-\u9fff])\s*[A-Za-z][A-Za-z .\-']*[a-z][A-Za-z .\-']*$")
_SUBJECT_CUT = re.compile(r"是|系|为|指")
_SEPARATOR_WORDS = ("或者", "或")
#: words that separate names only when the names around them share a head (鼻硬结病和咽硬结病), else they are
#: part of one name (脂肪和碳水化合物诱导的高脂血症)
_JOINING_WORDS = re.compile("以及|和|及|与")
def clean_alias(text: str) -> str | None:
    """A name as written after a pattern, cleaned (quotes, brackets and their content, surrounding
    punctuation), or None when it is not a usable name (see the module docstring)."""
    name = _BRACKETED.sub("", text)
    name = name[0] + re.sub("[“”「」『』‘’]", "", name[1:-1]) + name[-1] if len(name) > 2 else name
    name = name.strip(" \t　“”\"'‘’「」『』《》()（）[]【】,，、.。:：;；")
    name = _TRAILING_GLOSS.sub("", name)  # 过熟儿post maurity: an English gloss without brackets
    name = re.sub(r"\s+", "", name) if _CJK.search(name) else name.strip()
    if len(name) > MAX_ALIAS_CHARS or len(_CJK.findall(name)) < 2 and not (_CJK.search(name) and len(name) >= 3):
        return None
    if name in GENERIC or _DEMONSTRATIVE.match(name) or _NAME_BREAKERS.search(name) or any(c in name for c in "()（）[]【】“”\"「」"):
        return None
    if name.startswith(("的", "等", "之", "和", "或", "及", "与")) or name.endswith(("等", "之", "和", "或", "及")):
        return None
    if name.endswith(("性", "型")):  # an adjective whose head was left out: 家族性或良性特发性震颤
        return None
    return name


def _split_names(text: str) -> list[str]:
    """Split a run of names at 、/，/,/或/和/及/以及/与 (a quote's content)."""
    parts = re.split(r"[、，,/]|以及|或者|或|和|及|与", text)
    return [p for p in parts if p.strip()]


def _skip_bracket(text: str, pos: int) -> int:
    """The index after a bracketed group starting at ``pos`` (nesting allowed), or ``pos`` when none starts."""
    if pos >= len(text) or text[pos] not in _OPEN:
        return pos
    depth = 0
    for i in range(pos, len(text)):
        if text[i] in _OPEN:
            depth += 1
        elif text[i] in _CLOSE:
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _bare_run(text: str, pos: int) -> int:
    """The end of a bare name starting at ``pos``: the first punctuation, bracket, quote or separator word."""
    i = pos
    while i < len(text):
        c = text[i]
        if c in _OPEN and i > pos:  # 麸质(gluten)过敏性肠病: a gloss inside a name
            end = _skip_bracket(text, i)
            if end < len(text) and _CJK.match(text[end]) and not _CLAUSE_WORDS.match(text, end) \
                    and not _NAME_BREAKERS.match(text, end):
                i = end
                continue
        if c in "，,、。；;：:！？!?\n" or c in _OPEN or c in _CLOSE or c in _QUOTES or c in "”」』’》":
            break
        if i > pos and text.startswith(_SEPARATOR_WORDS, i):
            break
        i += 1
        if i < len(text) and text[i] in _QUOTES and text[i] not in "\"'":  # 中性粒细胞“麻痹”: one name
            close = text.find(_QUOTES[text[i]], i + 1)
            if 0 < close - i <= MAX_ALIAS_CHARS:
                i = close + 1
    return i


def _continues(piece: str, names: list[str]) -> bool:
    """Whether ``piece``, after a ，, is one more name of the list ``names`` rather than a new clause: short, no
    clause word, and sharing its last character or a character bigram with a name already read (紫绀，发绀)."""
    return 0 < len(piece) <= COMMA_NAME_CHARS and not _CLAUSE_WORDS.search(piece) and _shares(piece, names)


def _split_joined(piece: str) -> list[str]:
    """``piece`` split at 和/及/与/以及 when every part is a name and they end alike (same head) or are all 4+
    characters long without 的 (角膜带状混浊和钙化带状角膜病变; 脂肪和碳水化合物诱导的高脂血症 stays one)."""
    parts = _JOINING_WORDS.split(piece)
    if len(parts) < 2 or not all(clean_alias(p) for p in parts):
        return [piece]
    if all(p[-1] == parts[0][-1] for p in parts[1:]) or all(len(p) >= 4 and "的" not in p for p in parts):
        return parts
    return [piece]


def _shares(piece: str, names: list[str]) -> bool:
    """``piece`` ends like one of ``names`` or shares a character bigram with one."""
    bigrams = {piece[i:i + 2] for i in range(len(piece) - 1)}
    return any(n and (n[-1] == piece[-1] or any(b in n for b in bigrams)) for n in names)


def _names_after(text: str) -> list[str]:
    """The names a statement gives, reading ``text`` (what follows the pattern, up to the sentence end)."""
    head = _AFTER_PATTERN.match(text)
    pos = head.end() if head else 0
    raw: list[str] = []
    first = True
    after_comma = False
    while pos < len(text):
        while pos < len(text) and text[pos] in " \t　":
            pos += 1
        if pos >= len(text):
            break
        c = text[pos]
        if c in _QUOTES:
            end = text.find(_QUOTES[c], pos + 1)
            if end < 0:
                break
            raw.extend(_split_names(text[pos + 1:end]))
            pos = end + 1
        else:
            end = _bare_run(text, pos)
            if end == pos:
                break
            piece = text[pos:end]
            if not first and after_comma and not _continues(piece, raw):
                break
            raw.append(piece)
            pos = end
        first = False
        after_comma = False
        while pos < len(text) and text[pos] in " \t　":
            pos += 1
        pos = _skip_bracket(text, pos)  # a gloss: 又称类癌瘤(carcinoidtumor)
        if pos >= len(text):
            break
        if text[pos] == "、":
            pos += 1
            continue
        word = next((w for w in _SEPARATOR_WORDS if text.startswith(w, pos)), None)
        if word is not None:
            pos += len(word)
            continue
        if text[pos] in "，,":
            # a comma continues the list only when the next piece is a short name ending at a separator
            nxt = pos + 1
            end = _bare_run(text, nxt)
            after = _skip_bracket(text, end)
            if _continues(text[nxt:end], raw) and (
                after >= len(text) or text[after] in "，,、" or text.startswith(_SEPARATOR_WORDS, after)
            ):
                pos, after_comma = nxt, True
                continue
        break
    out: list[str] = []
    for piece in (part for whole in raw for part in _split_joined(whole)):
        name = clean_alias(piece)
        if name is not None and name not in out:
            out.append(name)
    return out


def _clean_subject(clause: str) -> str:
    """A subject clause without brackets, enumeration marks, leading connectives and trailing adverbs."""
    s = clause
    while True:
        t = _BRACKETED.sub("", s)
        if t == s:
            break
        s = t
    s = s.strip(" \t　“”\"'‘’「」『』《》")
    changed = True
    while changed and s:
        changed = False
        for adverb in _TRAILING_ADVERBS:
            if s.endswith(adverb) and len(s) > len(adverb):
                s, changed = s[: -len(adverb)].rstrip(), True
                break
            if s == adverb:
                s, changed = "", True
                break
    s = _ENUMERATION.sub("", s)
    changed = True
    while changed and s:
        changed = False
        for word in _LEADING_WORDS:
            if s.startswith(word) and len(s) >= len(word) + 2:
                s, changed = s[len(word):].lstrip(), True
                break
    return s.strip(" \t　“”\"'‘’「」『』《》:：")


def _last_clause(text: str) -> str:
    parts = re.split(r"[，,：:、]", text)
    return parts[-1] if parts else ""


def _sentence_subject(sentence: str) -> str:
    """The subject of a sentence: its first clause (brackets removed), cut before 是/系/为/指."""
    first = re.split(r"[，,：:]", _BRACKETED.sub("", sentence), maxsplit=1)[0]
    cut = _SUBJECT_CUT.search(first)
    return _clean_subject(first[: cut.start()] if cut else first)


def _open_bracket(pre: str) -> int:
    """The index of the innermost bracket still open at the end of ``pre``, or -1."""
    stack: list[int] = []
    for i, c in enumerate(pre):
        if c in _OPEN:
            stack.append(i)
        elif c in _CLOSE and stack:
            stack.pop()
    return stack[-1] if stack else -1


def _close_bracket(text: str) -> int:
    depth = 0
    for i, c in enumerate(text):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            if depth == 0:
                return i
            depth -= 1
    return len(text)


class Statement(NamedTuple):
    """One alias statement: ``subject`` the cleaned subject clause (maybe a pronoun; empty when none was found),
    ``names`` the cleaned names given, ``direct`` whether the subject is the clause right before the pattern
    (False: borrowed from the sentence's or the previous sentence's subject)."""

    subject: str
    names: list[str]
    direct: bool
    #: the names are a bracketed gloss (X（简称Y）): the subject may be a stored name ending the clause
    bracket: bool = False


def statements(text: str) -> list[Statement]:
    """Every alias statement of ``text``, in order (see :class:`Statement` and the module docstring)."""
    if not _PATTERN_RE.search(text):  # most texts: no pattern word in any of their sentences
        return []
    out: list[Statement] = []
    previous_subject = ""
    start = 0
    sentences: list[str] = []
    for m in _SENTENCE_END.finditer(text):
        sentences.append(text[start:m.start()])
        start = m.end()
    sentences.append(text[start:])
    for sentence in sentences:
        sentence_subject = _sentence_subject(sentence)
        if not sentence_subject or _PATTERN_RE.match(_clean_subject(sentence)):  # 。又称X，简称Y: X's subject
            sentence_subject = previous_subject
        for m in _PATTERN_RE.finditer(sentence):
            pre, post = sentence[: m.start()], sentence[m.end():]
            bracket = _open_bracket(pre)
            if bracket >= 0:  # 心肌梗死（acute myocardial infarction，简称心梗）
                post = post[: _close_bracket(post)]
                subject = _clean_subject(_last_clause(_BRACKETED.sub("", pre[:bracket])))
                names = _names_after(post)
                if names:
                    out.append(Statement(subject, names, bool(subject), bracket=True))
                continue
            subject = _clean_subject(_last_clause(_clean_subject(pre)))
            direct = bool(subject)
            if not subject:
                stripped = _clean_subject(pre).rstrip("，,：: ")
                before = _clean_subject(_last_clause(stripped))
                if before and _clean_subject_name(before):  # 所谓早期预防，又称一级预防: the clause before
                    subject, direct = before, True
                else:
                    subject = previous_subject if not stripped.strip() else sentence_subject
            names = _names_after(post)
            if names:
                out.append(Statement(subject, names, direct))
        if sentence.strip():
            previous_subject = sentence_subject
    return out


def _ratio(a: str, b: str) -> float:
    return SequenceMatcher(None, fold_alias(a), fold_alias(b), autojunk=False).ratio()


def _clean_subject_name(subject: str) -> bool:
    """A subject that is itself a usable name (for the symmetric attribution)."""
    return clean_alias(subject) == subject and not _CLAUSE_WORDS.search(subject) and subject not in PRONOUNS


def _subsequence(short: str, long: str) -> bool:
    chars = iter(long)
    return all(c in chars for c in short)


def _own_variant(subject: str, own: str) -> bool:
    """``subject`` is another spelling of ``own`` (小儿X's text about X): close by character ratio, neither
    ``own`` cut short (肩峰下滑囊 for 肩峰下滑囊炎 is the organ) or followed by more words, nor ``own`` (without a
    小儿-like qualifier) with words inserted (急性X, 耳廓浆液性软骨膜炎: kinds of X)."""
    core = next((own[len(p):] for p in _OWN_PREFIXES if own.startswith(p) and len(own) > len(p) + 1), own)
    if subject == core:
        return True
    if any(subject.startswith(o) or o.startswith(subject) for o in {own, core}):
        return False
    if len(subject) > len(core) and _subsequence(core, subject):
        return False
    return _ratio(subject, own) >= OWN_VARIANT_RATIO or (core != own and _ratio(subject, core) >= OWN_VARIANT_RATIO)


#: what may stand right before a stored name that ends a clause (进展为心肌梗死（简称心梗）), so that the name is
#: the whole noun (not 的肺气肿 / 急性心肌梗死 when only 心肌梗死 is stored)
_BEFORE_TAIL = frozenset("为成是或和及与了患即如若在对由从把被将至到让使见并致、，,：:")


def _stored_tail(clause: str, stored: set[str]) -> str | None:
    """The longest stored name ending ``clause`` and preceded by a function character (:data:`_BEFORE_TAIL`)."""
    for start in range(max(0, len(clause) - 40), len(clause) - 1):
        tail = clause[start:]
        if tail in stored and (start == 0 or clause[start - 1] in _BEFORE_TAIL):
            return tail
    return None


def _attribute(statement: Statement, own: str | None, stored: set[str]) -> list[tuple[str, list[str]]]:
    """Which stored names a statement's names belong to (see the module docstring)."""
    subject, names = statement.subject, statement.names
    if subject in stored and (statement.direct or subject == own):
        return [(subject, names)]
    if statement.bracket and subject:
        tail = _stored_tail(subject, stored)
        if tail is not None:
            return [(tail, names)]
    if own is not None and subject in PRONOUNS:
        return [(own, names)]
    if own is not None and subject and _own_variant(subject, own):
        return [(own, [subject, *names] if clean_alias(subject) == subject else names)]
    if subject and statement.direct and _clean_subject_name(subject):
        # only the first name: later ones may have drifted into a list of other things (…、腺型唇炎、肉芽肿性唇炎)
        return [(names[0], [subject, *names[1:]])] if names[0] in stored else []
    return []


def _add(index: dict[str, list[str]], target: str, names: Iterable[str]) -> None:
    own = fold_alias(target)
    bucket = index.setdefault(target, [])
    for name in names:
        if fold_alias(name) != own and name not in bucket:
            bucket.append(name)


def extract_aliases(name: str, texts: Iterable[str]) -> list[str]:
    """The other names ``texts`` (the thing's own texts) say ``name`` has, in order of appearance."""
    index: dict[str, list[str]] = {}
    for text in texts:
        for statement in statements(text or ""):
            for target, given in _attribute(statement, name, {name}):
                if target == name:
                    _add(index, name, given)
    return index.get(name, [])


def alias_index(records: Iterable[tuple[str, Iterable[str]]],
                names: Iterable[str] = ()) -> dict[str, list[str]]:
    """Aliases of every stored name, read from every record's texts: ``records`` are ``(stored name, texts)``
    pairs; ``names`` adds stored names that have no texts of their own. A statement is attributed to the stored
    name its subject names (pronouns and near variants of the record's own name: to the record), so one
    record's text can give another's alias. Names with no alias are left out."""
    records = [(name, list(texts)) for name, texts in records]
    stored = {name for name, _ in records} | set(names)
    index: dict[str, list[str]] = {}
    for own, texts in records:
        for text in texts:
            for statement in statements(text or ""):
                for target, found in _attribute(statement, own, stored):
                    _add(index, target, found)
    return {k: v for k, v in index.items() if v}
