"""The randomness outside the generator that the exact auditor's sandbox watches (:class:`._audit_replay.Sandbox`).

An audited mechanism may draw only from the generator it is given; these
are the other sources it could reach: the operating system's entropy, the
standard library's system random, numpy's fresh seeds, and the random
devices opened as files.
"""

from __future__ import annotations

import builtins
import io
import os
import random

import numpy.random.bit_generator as npbg

__all__ = ["RANDOM_DEVICES", "entropy_sources", "file_openers", "names_random_device"]


def entropy_sources():
    """Entropy sources outside the generator watched during an audited run, as (module, attribute).

    The operating system's, the standard library's system random (and
    ``secrets``), and the fresh seeds of numpy's generators.
    """
    return [(os, "urandom"), (os, "getrandom"), (random, "_urandom"), (npbg, "randbits")]


#: Files whose reading is randomness from outside the generator.
RANDOM_DEVICES = frozenset({"/dev/urandom", "/dev/random", "/dev/arandom", "/dev/hwrng", "/dev/srandom"})


def file_openers():
    """Functions that open files, watched for the random devices: (module, attribute)."""
    return [(builtins, "open"), (io, "open"), (os, "open")]


def names_random_device(file) -> bool:
    """Whether ``file`` (a path, str or bytes) names one of :data:`RANDOM_DEVICES`, itself or by a link."""
    try:
        return os.path.realpath(os.fsdecode(file)) in RANDOM_DEVICES or os.fsdecode(file) in RANDOM_DEVICES
    except (TypeError, ValueError):
        return False
