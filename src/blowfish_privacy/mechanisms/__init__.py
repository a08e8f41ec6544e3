"""Mechanisms: each takes an exact aggregate, a policy or sensitivity, an
epsilon and a :class:`~blowfish_privacy.Generator`, and returns a result
object carrying the released values, the epsilon actually spent, the
sensitivity used and the expected error.

One subpackage per family, each exporting its public names (its
``__all__``), all of which this package exports too:

``counts``
    histograms with the policy's sensitivity, and under public counts.
``cumulative``
    CDFs and range queries on an ordered domain (ordered, ordered
    hierarchical; identity, hierarchical and Privelet as DP comparisons).
``data_dependent``
    DAWA and the transformed data-dependent mechanisms (001).
``clustering``
    k-means: SuLQ rounds and the one-shot grid mechanism.
``grids``
    two-dimensional grids.
``pufferfish``
    Pufferfish sums (003 Sec 7.1).
``strategies``
    linear strategies optimised for the policy's sensitivity.

Shared by all: :mod:`.plan` (``Plan``, ``NoisePart``, ``Release``) and
:mod:`.histogram` (``HistogramRelease``).  The DP-only algorithms used for
comparison are in :mod:`blowfish_privacy.baselines`.
"""

from . import clustering, counts, cumulative, data_dependent, grids, pufferfish, strategies
from .clustering import *  # noqa: F401,F403  (each family's __all__)
from .counts import *  # noqa: F401,F403
from .cumulative import *  # noqa: F401,F403
from .data_dependent import *  # noqa: F401,F403
from .grids import *  # noqa: F401,F403
from .histogram import HistogramRelease
from .plan import NoisePart, Plan, Release
from .pufferfish import *  # noqa: F401,F403
from .strategies import *  # noqa: F401,F403

FAMILIES = (counts, cumulative, data_dependent, clustering, grids, pufferfish, strategies)

# Spelt out family by family (not a comprehension) so that type checkers see the re-exports.
__all__ = ["HistogramRelease", "NoisePart", "Plan", "Release"]
__all__ += counts.__all__
__all__ += cumulative.__all__
__all__ += data_dependent.__all__
__all__ += clustering.__all__
__all__ += grids.__all__
__all__ += pufferfish.__all__
__all__ += strategies.__all__
