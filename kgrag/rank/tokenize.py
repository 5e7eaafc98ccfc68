"""Tokenisation for mixed Chinese/English text (BM25, keyword extraction).

    tokenize("百日咳的症状 people.person.place_of_birth")   # -> ['百日咳', '症状', 'people', 'person', 'place', 'birth']

Rules, in order:

1. NFKC-normalise (full-width letters, digits and punctuation become ASCII) and lowercase
   (:func:`kgrag.text.fold_width`).
2. Text without any Chinese character never touches jieba: it is split into ASCII word tokens
   (``[a-z0-9]+``, decimals such as ``3.5`` kept whole). Everything else — dots, underscores, hyphens,
   spaces, punctuation — separates tokens, so the Freebase relation ``people.person.place_of_birth`` gives
   ``people, person, place, of, birth`` (``of`` then goes as a stop word).
3. Text with Chinese is segmented by jieba (precise mode, HMM on). A jieba token containing a Chinese
   character is kept whole (so a dictionary word such as ``维生素b12`` added with :func:`add_words` survives);
   an ASCII jieba token is split by the rule of step 2, so ASCII runs tokenise the same either way.
4. Stop words (a small built-in English and Chinese list) and punctuation are dropped unless
   ``stopwords=False``. Numbers are kept.

jieba's dictionary is loaded once, lazily, on the first Chinese text, with its logging quietened. The segmenter is
a private ``jieba.Tokenizer`` so that :func:`add_words` does not leak into other users of jieba's global one.
Note that :func:`add_words` changes how later texts segment: build indexes after adding the words.

jieba segments each *block* (a run of jieba's word characters: Chinese, ASCII letters and digits, ``+#&._%-``)
on its own, so a text's tokens are the concatenation of its blocks' tokens. Inside ``with tokenize_cache():``
each distinct block is segmented once and its tokens kept until the outermost ``with`` ends (loading a
network tokenises the same texts for its vectors, its text index and its chunks' vectors); the tokens are the
same as without the cache. :func:`kgrag.rank.domain.tokenize_many` segments a batch's distinct blocks only.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import jieba

from kgrag.text import fold_width

__all__ = ["ENGLISH_STOPWORDS", "CHINESE_STOPWORDS", "add_words", "ascii_words", "has_cjk", "is_word",
           "no_dictionary_word", "tokenize", "tokenize_cache", "word_pieces"]


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


ENGLISH_STOPWORDS: frozenset[str] = _wordset(
    """
    a an the of in on at to for by with from into onto about as and or but nor not no
    is are was were be been being am do does did done has have had having
    it its this that these those there here what which who whom whose where when why how
    i me my we our you your he him his she her they them their
    can could should would will shall may might must also than then so such very just only
    """
)

CHINESE_STOPWORDS: frozenset[str] = _wordset(
    """
    的 地 得 了 着 过 是 在 和 与 及 以及 或 或者 并 并且 而 而且 也 都 就 还 又 把 被 给 对 对于 于 从 向 往
    为 为了 以 之 其 这 那 这个 那个 这些 那些 这里 那里 哪 哪个 哪些 哪里 哪儿 什么 怎么 怎样 怎么样 如何
    为什么 多少 几 谁 吗 呢 吧 啊 呀 哦 嘛 么 我 你 您 他 她 它 我们 你们 他们 她们 它们 自己 有 有没有 没有
    是否 一个 一些 一下 请 请问 可以 能 能够 会 要 想 应该 需要 关于 等 等等
    """
)

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Chinese (CJK ideograph) character."""
    return _CJK.search(text) is not None


_ASCII_WORD = re.compile(r"\d+(?:\.\d+)+|[a-z0-9]+")

_segmenter: jieba.Tokenizer | None = None
_pending_words: list[str] = []
_lock = threading.Lock()
#: jieba's block pattern (``jieba.re_han_default``: the text between its matches is never joined to a word)
_JIEBA_BLOCK = re.compile("([\u4E00-\u9FD5a-zA-Z0-9+#&\\._%\\-]+)", re.U)
#: block -> its tokens, stop words kept (only inside ``with tokenize_cache()``)
_block_cache: dict[str, tuple[str, ...]] | None = None
_cache_depth = 0


def _get_segmenter() -> jieba.Tokenizer:
    """The process-wide jieba tokenizer, initialised on first use."""
    global _segmenter
    if _segmenter is None:
        with _lock:
            if _segmenter is None:
                jieba.setLogLevel(logging.WARNING)
                segmenter = jieba.Tokenizer()
                segmenter.initialize()
                for word in _pending_words:
                    segmenter.add_word(word)
                _pending_words.clear()
                _segmenter = segmenter
    return _segmenter


def add_words(words: Iterable[str]) -> int:
    """Add words (e.g. instance names) to the jieba dictionary so segmentation keeps them whole.

    Words are normalised like the text (NFKC + lowercase); blank words are skipped. A word only matches as a
    whole when it consists of Chinese characters, ASCII letters/digits and ``+#&._%-`` (jieba's own rule).
    Returns how many words were added. Cheap before the first Chinese text: the words are queued and added
    when jieba initialises.
    """
    cleaned = [w for w in (fold_width(word).strip() for word in words) if w]
    with _lock:
        if _segmenter is None:
            _pending_words.extend(cleaned)
            return len(cleaned)
        if _block_cache is not None and cleaned:
            _block_cache.clear()  # segmented with the old dictionary
    for word in cleaned:
        _segmenter.add_word(word)
    return len(cleaned)


def word_pieces(text: str) -> list[str]:
    """jieba's pieces of the normalised ``text`` (NFKC, lower-cased), nothing dropped: they join to it. For
    word-level views of short strings such as names (:mod:`kgrag.search.name_segments`). An ASCII text holding none
    of the dictionary's ASCII words (:func:`ascii_words`) gets what jieba would give without its search
    (:func:`_ascii_pieces`): a million-row network's names are such texts."""
    if not text:
        return []
    folded = fold_width(text)
    if no_dictionary_word(folded):
        return _ascii_pieces(folded)
    return list(_get_segmenter().cut(folded, HMM=True))


def no_dictionary_word(text: str) -> bool:
    """Whether the folded ``text`` is ASCII and holds none of :func:`ascii_words`: no dictionary word of 2+
    characters occurs in it, so jieba's search finds nothing there."""
    return text.isascii() and not any(word in text for word in ascii_words())


#: jieba's split of a block it could not match to dictionary words (``jieba.finalseg.re_skip``) and of the text
#: between blocks (``jieba.re_skip_default``)
_UNKNOWN_RUN = re.compile(r"([a-zA-Z0-9]+(?:\.\d+)?%?)")
_SPACE = re.compile(r"(\r\n|\s)", re.U)


def _ascii_pieces(text: str) -> list[str]:
    """``jieba.cut(text, HMM=True)`` for an ASCII ``text`` in which no dictionary word of 2+ characters occurs:
    each block of jieba's block characters (:data:`_JIEBA_BLOCK`) routes through single characters only, so it is
    one piece when one character long, else split as jieba's HMM step splits what is not a Chinese run (runs of
    letters and digits, a decimal and a ``%`` kept with them, whatever lies between); between blocks each
    whitespace is one piece and any other character its own (tested against jieba on random texts)."""
    out: list[str] = []
    for block in _JIEBA_BLOCK.split(text):
        if not block:
            continue
        if _JIEBA_BLOCK.match(block):
            out.extend([block] if len(block) == 1 else [x for x in _UNKNOWN_RUN.split(block) if x])
        else:
            for x in _SPACE.split(block):
                if _SPACE.match(x):
                    out.append(x)
                else:
                    out.extend(x)
    return out


def is_word(word: str) -> bool:
    """Whether the normalised ``word`` is in the jieba dictionary (with a positive frequency)."""
    return bool(_get_segmenter().FREQ.get(fold_width(word)))


_ascii_words: tuple[tuple[int, float], frozenset[str]] | None = None


def ascii_words() -> frozenset[str]:
    """The jieba dictionary's ASCII words of 2+ characters (positive frequency; a handful — ``c++``, ``at&t`` — and
    any :func:`add_words` added), read again whenever the dictionary grows: an ASCII text holding none of them
    holds no dictionary word of 2+ characters (what :func:`is_word` would find)."""
    global _ascii_words
    segmenter = _get_segmenter()
    stamp = (len(segmenter.FREQ), float(segmenter.total))
    cached = _ascii_words
    if cached is None or cached[0] != stamp:
        words = frozenset(k for k, v in list(segmenter.FREQ.items()) if v and len(k) >= 2 and k.isascii())
        cached = _ascii_words = (stamp, words)
    return cached[1]


@contextmanager
def tokenize_cache() -> Iterator[dict[str, tuple[str, ...]]]:
    """Within the ``with``, each distinct jieba block is segmented once (see the module docstring); nested uses
    share the outermost cache, which is dropped when it ends. Yields the cache (block -> tokens, stop words
    kept)."""
    global _block_cache, _cache_depth
    with _lock:
        if _block_cache is None:
            _block_cache = {}
        _cache_depth += 1
        cache = _block_cache
    try:
        yield cache
    finally:
        with _lock:
            _cache_depth -= 1
            if _cache_depth == 0:
                _block_cache = None


def text_blocks(text: str) -> list[str] | None:
    """The non-empty jieba blocks (and the pieces between them) of normalised ``text``, in order, or None when
    it holds no Chinese (:func:`tokenize` then never uses jieba)."""
    if not text:
        return None
    text = fold_width(text)
    if not _CJK.search(text):
        return None
    return [block for block in _JIEBA_BLOCK.split(text) if block]


def segment_blocks(blocks: Sequence[str]) -> list[tuple[str, ...]]:
    """The tokens (stop words kept) of each block of :func:`text_blocks`."""
    segmenter = _get_segmenter()
    out = []
    for block in blocks:
        tokens: list[str] = []
        for piece in segmenter.cut(block, HMM=True):
            if _CJK.search(piece):
                tokens.append(piece)
            else:
                tokens.extend(_ASCII_WORD.findall(piece))
        out.append(tuple(tokens))
    return out


def join_blocks(blocks: Iterable[str], cache: dict[str, tuple[str, ...]], stopwords: bool) -> list[str]:
    """A text's tokens from its blocks' cached tokens."""
    if stopwords:
        return [tok for block in blocks for tok in cache[block]
                if tok not in ENGLISH_STOPWORDS and tok not in CHINESE_STOPWORDS]
    return [tok for block in blocks for tok in cache[block]]


def _keep(token: str, stopwords: bool) -> bool:
    return not stopwords or (token not in ENGLISH_STOPWORDS and token not in CHINESE_STOPWORDS)


def tokenize(text: str, *, stopwords: bool = True) -> list[str]:
    """Split ``text`` into lowercase tokens (see the module docstring for the rules).

    >>> tokenize("people.person.place_of_birth")
    ['people', 'person', 'place', 'birth']
    >>> tokenize("people.person.place_of_birth", stopwords=False)
    ['people', 'person', 'place', 'of', 'birth']
    """
    if not text:
        return []
    text = fold_width(text)
    if not _CJK.search(text):
        return [t for t in _ASCII_WORD.findall(text) if _keep(t, stopwords)]
    cache = _block_cache
    if cache is not None:
        blocks = [block for block in _JIEBA_BLOCK.split(text) if block]
        missing = [block for block in dict.fromkeys(blocks) if block not in cache]
        if missing:
            cache.update(zip(missing, segment_blocks(missing), strict=True))
        return join_blocks(blocks, cache, stopwords)
    tokens: list[str] = []
    for piece in _get_segmenter().cut(text, HMM=True):
        if _CJK.search(piece):
            if _keep(piece, stopwords):
                tokens.append(piece)
        else:
            tokens.extend(t for t in _ASCII_WORD.findall(piece) if _keep(t, stopwords))
    return tokens
