"""Where the benchmarks find the DPBench data: ``$BLOWFISH_DATA``, else ``../shared/data`` beside the repository.

The package reads only ``$BLOWFISH_DATA`` (or ``--data``); the benchmarks, run
from a checkout, also look beside it and set the variable for the package.
"""

import os
from pathlib import Path

_BESIDE = Path(__file__).resolve().parents[1].parent / "shared" / "data"

if not os.environ.get("BLOWFISH_DATA") and _BESIDE.is_dir():
    os.environ["BLOWFISH_DATA"] = str(_BESIDE)

#: The folder holding dpbench_1d/ and dpbench_2d/, or None where there is none.
DATA = os.environ.get("BLOWFISH_DATA") or None
