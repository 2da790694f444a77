"""A one-feature logistic fit, and the threshold it implies: where a judgement becomes more
likely right than wrong."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RIDGE = 0.01  # keeps the fit finite when the labels separate perfectly (they often will)
ITERATIONS = 50


def fit(xs: Sequence[float], ys: Sequence[bool]) -> tuple[float, float]:
    """(intercept, slope) of P(y | x) = sigmoid(intercept + slope·x), by Newton's method."""
    x = np.column_stack([np.ones(len(xs)), np.asarray(xs, dtype=np.float64)])
    y = np.asarray(ys, dtype=np.float64)
    w = np.zeros(2)
    for _ in range(ITERATIONS):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + RIDGE * w
        hessian = (x.T * (p * (1 - p))) @ x + RIDGE * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return float(w[0]), float(w[1])


def threshold(intercept: float, slope: float) -> float:
    """The x at which P(right) = 1/2, within [0, 1]. A fit that does not rise with x says the
    probability tells nothing: trust always (mostly right) or never (mostly wrong)."""
    if slope <= 0:
        return 0.0 if intercept > 0 else 1.0
    return min(1.0, max(0.0, -intercept / slope))
