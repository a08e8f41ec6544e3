"""Seeded releases of every kind under every policy give the values they gave before: a hash check.

Moving code around (packages, registries, plans) must not change what a
seeded release publishes.  Each case runs the public API
(:func:`blowfish_privacy.release.release`) on a fixed table with
``run.seed = 7`` and hashes the released values (counts, cumulative
counts, answers, centroids, buckets; floats to 10 significant digits, so
that the last bits of a least-squares solve do not matter) against
``tests/data/seeded_outputs.json`` (a case the spec refuses, because the
policy does not fit the kind, is stored as refused).  A change made on purpose (a new
sampler, new noise streams) regenerates the file:

    BLOWFISH_UPDATE_SEEDED=1 pytest tests/release/test_seeded_outputs.py -m slow

and says so in its commit.  The cases are the neighbour harness's kinds
and policies (generated from the registered kinds), so a kind added to the
registry is hashed here too.
"""

import hashlib
import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest

from blowfish_privacy.release import SpecError, release

HERE = Path(__file__).parent
STORE = HERE.parent / "data" / "seeded_outputs.json"
_spec = importlib.util.spec_from_file_location("_neighbour_cases", HERE / "test_neighbours.py")
NB = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(NB)

#: The keys of a release document that hold what it publishes (the rest describes it).
RELEASED = ("counts", "cumulative", "value", "quantiles", "ranges", "centroids", "initial_centroids", "buckets",
            "per_round", "n")
CASES = [(k, p) for k in NB.KINDS for p in (NB.POLICIES if NB.KINDS[k][2] else ["full"])]
UPDATE = os.environ.get("BLOWFISH_UPDATE_SEEDED") == "1"


def _canonical(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.10g}"
    if isinstance(v, dict):
        return {k: _canonical(x) for k, x in sorted(v.items())}
    return [_canonical(x) for x in v]


def _digest(kind: str, policy: str, tmp_path: Path) -> str:
    rows = NB._rows(False, False)
    table = {"age": np.array([r[0] for r in rows]), "sex": np.array([r[1] for r in rows]),
             "hours": np.array([r[2] for r in rows])}
    text = NB._spec(kind, policy, "plain").replace('path = "data.csv"\n', "")
    text = text.replace("[dataset]", "[dataset]\nallow_disclosures = true", 1) + "\n[run]\nseed = 7\n"
    try:
        res = release(text, table, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=tmp_path / "o",
                      plots=False, allow_seeded=True)
    except SpecError:  # the policy does not fit the kind's attributes: refused at plan time, and must stay so
        return "refused"
    (doc,) = res.releases
    values = {k: _canonical(doc[k]) for k in RELEASED if k in doc}
    assert values, f"{kind}: no released values found among {sorted(doc)}"
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()


@pytest.fixture(scope="module")
def store():
    known = json.loads(STORE.read_text()) if STORE.exists() else {}
    yield known
    if UPDATE:
        STORE.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")


@pytest.mark.slow
@pytest.mark.parametrize("kind,policy", CASES)
def test_seeded_release_publishes_what_it_did(kind, policy, tmp_path, store):
    got = _digest(kind, policy, tmp_path)
    key = f"{kind}/{policy}"
    if UPDATE:
        store[key] = got
        return
    assert key in store, f"{key} has no stored hash: run with BLOWFISH_UPDATE_SEEDED=1 once and commit the file"
    assert got == store[key], f"{key}: the seeded release publishes other values than before"


def test_every_case_has_a_stored_hash_and_no_stale_one():
    known = json.loads(STORE.read_text())
    assert set(known) == {f"{k}/{p}" for k, p in CASES}
