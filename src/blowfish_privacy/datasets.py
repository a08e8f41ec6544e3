"""Small derived data sets shipped with the package (UCI, CC BY 4.0).

See ``blowfish_privacy/data/README.md`` for sources and changes.
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import numpy.typing as npt

from .policy.domain import Domain, Ordinal


def _read_counts(name: str) -> np.ndarray:
    text = resources.files("blowfish_privacy").joinpath("data", name).read_text()
    rows = [line for line in text.splitlines() if line and not line.startswith("#")]
    data = np.array([[int(v) for v in line.split(",")] for line in rows[1:]], dtype=np.int64)
    return data


def adult_capital_loss() -> tuple[Domain, npt.NDArray[np.int64]]:
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


def skin(fraction: float = 1.0, *, seed: int = 0) -> tuple[Domain, npt.NDArray[np.int64]]:
    """UCI Skin Segmentation colours (B, G, R in 0..255), or a random sample.

    Parameters
    ----------
    fraction : float, default 1.0
        Share of the 245,057 rows to keep, in (0, 1]: 1.0 is the full set
        SKIN, 0.1 and 0.01 the samples SKIN10 and SKIN01 of 000 Sec 6.1
        (``round(fraction * 245057)`` rows drawn without replacement).
    seed : int, default 0
        Seed of the sample (ignored for the full set).

    Returns
    -------
    domain : Domain
        Three ordinal attributes ``b``, ``g``, ``r`` over 0..255 (256^3
        cells).
    points : numpy.ndarray of int64, shape (n, 3)

    Source: UCI Machine Learning Repository, Skin Segmentation (Bhatt and
    Dhall), CC BY 4.0; see ``blowfish_privacy/data/README.md``.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise ValueError(f"fraction must be a number in (0, 1], got {fraction!r}")
    with resources.files("blowfish_privacy").joinpath("data", "uci_skin_bgr.npz").open("rb") as fh:
        bgr = np.load(fh)["bgr"].astype(np.int64)
    if fraction < 1:
        size = max(1, round(fraction * bgr.shape[0]))
        pick = np.sort(np.random.default_rng(seed).choice(bgr.shape[0], size=size, replace=False))
        bgr = bgr[pick]
    domain = Domain([Ordinal(name, 0, 255) for name in ("b", "g", "r")])
    return domain, bgr
