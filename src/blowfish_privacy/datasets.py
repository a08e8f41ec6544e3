"""Small derived data sets shipped with the package (UCI, CC BY 4.0).

See ``blowfish_privacy/data/README.md`` for sources and changes.
"""

from __future__ import annotations

from importlib import resources

import numpy as np

from .domain import Domain


def _read_counts(name: str) -> np.ndarray:
    text = resources.files("blowfish_privacy").joinpath("data", name).read_text()
    rows = [line for line in text.splitlines() if line and not line.startswith("#")]
    data = np.array([[int(v) for v in line.split(",")] for line in rows[1:]], dtype=np.int64)
    return data


def adult_capital_loss() -> tuple[Domain, np.ndarray]:
    """UCI Adult ``capital-loss``: its 1-D domain 0..4356 and the histogram.

    Returns
    -------
    domain : Domain
        ``Domain.ordinal("capital_loss", 0, 4356)`` (4,357 values).
    hist : numpy.ndarray of int64, shape (4357,)
        Records per value; sums to 48,842 (adult.data + adult.test).

    Source: UCI Machine Learning Repository, Adult (Becker and Kohavi,
    1996), CC BY 4.0.
    """
    data = _read_counts("adult_capital_loss.csv")
    domain = Domain.ordinal("capital_loss", 0, 4356)
    hist = np.zeros(domain.size, dtype=np.int64)
    hist[data[:, 0]] = data[:, 1]
    return domain, hist
