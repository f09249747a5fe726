"""PNG plots of a fitted EBM: global term importances and the shape functions of its top terms.

Uses matplotlib's Figure directly (no pyplot, no display backend needed).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from raysim.models.features import TabularModel


def _ebm(model: TabularModel):
    if model.kind != "ebm" or model.estimator is None:
        raise ValueError("plots need a fitted EBM (kind='ebm')")
    return model.estimator


def importances(model: TabularModel) -> list[tuple[str, float]]:
    """(term, mean absolute score) of a fitted EBM, most important first."""
    ebm = _ebm(model)
    pairs = zip(ebm.term_names_, ebm.term_importances())
    return sorted(((n, float(v)) for n, v in pairs), key=lambda p: -p[1])


def plot_importances(model: TabularModel, path, title: str, top: int = 15) -> Path:
    """Horizontal bar chart of the `top` term importances; returns the PNG path."""
    pairs = importances(model)[:top][::-1]
    fig = Figure(figsize=(6, 0.35 * len(pairs) + 1.2), layout="constrained")
    ax = fig.subplots()
    ax.barh([n for n, _ in pairs], [v for _, v in pairs], color="tab:blue")
    ax.set_xlabel("mean |score| (model output units; log-odds for a classifier)")
    ax.set_title(title)
    ax.grid(axis="x", linestyle=":")
    return _save(fig, path)


def plot_shapes(model: TabularModel, path, title: str, top: int = 6) -> Path:
    """Shape functions (score per feature value) of the `top` most important terms; returns the path.

    Continuous features are drawn as steps over their bins, categorical ones as bars (at most 30
    categories, the largest scores by magnitude); a classifier gets one line per class.
    """
    ebm = _ebm(model)
    names = [n for n, _ in importances(model)[:top]]
    explanation = ebm.explain_global()
    cols = min(3, len(names))
    rows = int(np.ceil(len(names) / cols))
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    classes = getattr(ebm, "classes_", None)
    for ax, name in zip(axes, names):
        data = explanation.data(list(ebm.term_names_).index(name))
        scores = np.asarray(data["scores"], dtype=float).reshape(len(data["scores"]), -1)
        labels = [f"class {c}" for c in classes] if scores.shape[1] > 1 and classes is not None else ["score"]
        if len(data["names"]) == len(scores) + 1:  # continuous: bin edges
            edges = np.asarray(data["names"], dtype=float)
            for j in range(scores.shape[1]):
                ax.step(edges, np.r_[scores[:, j], scores[-1, j]], where="post", label=labels[j])
        else:  # categorical: one bar (group) per category
            order = np.argsort(-np.abs(scores).max(axis=1))[:30]
            x = np.arange(len(order))
            width = 0.8 / scores.shape[1]
            for j in range(scores.shape[1]):
                ax.bar(x + j * width, scores[order, j], width=width, label=labels[j])
            ax.set_xticks(x + 0.4 - width / 2, [str(data["names"][i]) for i in order], rotation=90, fontsize=6)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_title(name, fontsize=9)
        ax.grid(axis="y", linestyle=":")
        if scores.shape[1] > 1:
            ax.legend(fontsize=7)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    fig.suptitle(title)
    return _save(fig, path)


def _save(fig: Figure, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path
