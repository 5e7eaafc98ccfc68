"""The trained plan scorer's trees, evaluated with numpy alone — what the agent loads, so a cold ``kgrag ask`` does not
import scikit-learn (0.6 s) to score a question's plans.

    forest = Forest.from_model(hgb)           # a fitted HistGradientBoostingClassifier (binary)
    forest.save(folder / "forest.npz"); Forest.load(folder / "forest.npz").proba(x)   # == hgb.predict_proba(x)[:, 1]

Contract: scikit-learn's histogram gradient boosting, binary: the raw score is the baseline plus, for every tree, the
value of the leaf a row reaches (a number at most ``num_threshold`` goes left, NaN goes where ``missing_go_to_left``
says), and the probability its logistic. All trees are walked at once (an array of nodes, trees × rows), one level
a step. Categorical splits are not supported (the scorer's features are all numbers): :meth:`Forest.from_model`
refuses a model that has one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Forest"]


class Forest:
    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.feature = arrays["feature"].astype(np.int64)
        self.threshold = arrays["threshold"].astype(np.float64)
        self.left = arrays["left"].astype(np.int64)
        self.right = arrays["right"].astype(np.int64)
        self.missing_left = arrays["missing_left"].astype(bool)
        self.leaf = arrays["leaf"].astype(bool)
        self.value = arrays["value"].astype(np.float64)
        self.roots = arrays["roots"].astype(np.int64)
        self.depth = int(arrays["depth"])
        self.baseline = float(arrays["baseline"])

    @classmethod
    def from_model(cls, model: Any) -> Forest:
        parts: dict[str, list[np.ndarray]] = {k: [] for k in ("feature", "threshold", "left", "right",
                                                               "missing_left", "leaf", "value")}
        roots, offset, depth = [], 0, 0
        for (tree,) in model._predictors:
            nodes = tree.nodes
            if nodes["is_categorical"].any():
                raise ValueError("categorical splits are not supported")
            roots.append(offset)
            parts["feature"].append(nodes["feature_idx"])
            parts["threshold"].append(nodes["num_threshold"])
            parts["left"].append(nodes["left"].astype(np.int64) + offset)
            parts["right"].append(nodes["right"].astype(np.int64) + offset)
            parts["missing_left"].append(nodes["missing_go_to_left"])
            parts["leaf"].append(nodes["is_leaf"])
            parts["value"].append(nodes["value"])
            depth = max(depth, int(nodes["depth"].max()))
            offset += len(nodes)
        arrays = {k: np.concatenate(v) for k, v in parts.items()}
        arrays.update(roots=np.array(roots), depth=np.array(depth),
                      baseline=np.array(float(np.ravel(model._baseline_prediction)[0])))
        return cls(arrays)

    def save(self, path: Path) -> None:
        np.savez_compressed(path, feature=self.feature, threshold=self.threshold, left=self.left, right=self.right,
                            missing_left=self.missing_left, leaf=self.leaf, value=self.value, roots=self.roots,
                            depth=np.array(self.depth), baseline=np.array(self.baseline))

    @classmethod
    def load(cls, path: Path) -> Forest:
        with np.load(path) as data:
            return cls({k: data[k] for k in data.files})

    def raw(self, x: np.ndarray) -> np.ndarray:
        """The raw score of each row of ``x`` (rows × features)."""
        x = np.asarray(x, dtype=np.float64)
        n = x.shape[0]
        node = np.repeat(self.roots[:, None], n, axis=1)  # trees × rows
        rows = np.arange(n)[None, :]
        for _ in range(self.depth + 1):
            leaf = self.leaf[node]
            if leaf.all():
                break
            values = x[rows, self.feature[node]]
            left = np.where(np.isnan(values), self.missing_left[node], values <= self.threshold[node])
            node = np.where(leaf, node, np.where(left, self.left[node], self.right[node]))
        return self.baseline + self.value[node].sum(axis=0)

    def proba(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.raw(x)))
