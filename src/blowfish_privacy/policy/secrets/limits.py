"""Work limits of the secret graphs: the one place to tune them.

Every limit is read at call time as ``limits.NAME``, so setting
``blowfish_privacy.policy.secrets.limits.ENUM_LIMIT`` (or monkeypatching it in a
test) changes the behaviour of every graph.  The same names are re-exported
by :mod:`blowfish_privacy.policy.secrets` for reading.
"""

#: Largest box (in cells) over which shortest-path lengths of a
#: DistanceThreshold graph are computed by dynamic programming.
DP_CELL_LIMIT = 2_000_000
#: Largest number of difference vectors enumerated for a sensitivity.
ENUM_LIMIT = 2_000_000
#: Largest number of elementary steps of the knapsack dynamic program.
KNAPSACK_LIMIT = 50_000_000
#: Default largest domain for explicit edge lists.
EDGE_LIMIT = 4096
#: Largest number of pairs of values checked one by one when no closed form
#: decides whether one graph contains another (:func:`uncovered_pair`).
PAIR_LIMIT = 10_000_000
#: Largest (sign vectors x domain values) for the exact widest-block search
#: of a listed Partition.
SIGN_LIMIT = 200_000_000

#: Magnitude below which int64 arithmetic (sums of a few products) is safe;
#: above it the code switches to exact Python integers.
SAFE = 2**62
#: Candidate pairs tested per chunk when listing edges.
PAIRS_PER_CHUNK = 1 << 20
