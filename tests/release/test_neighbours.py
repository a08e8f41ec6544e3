"""Neighbour-differential harness for the ``blowfish`` command (issue: plan then measure).

The adversary's test: run the same spec on two neighbouring datasets (one
record moved along a secret edge of the policy), several times each with
the secure generator, and collect every output leaf a reader can see: JSON
fields, CSV cells, console lines, the exit status and the ledger rows.  A
leaf that is constant over the runs of each dataset but differs between the
datasets (or is present for one and absent for the other) depends on the
data other than through calibrated noise: a leak.

Noise is made large (small epsilon) so that a noisy leaf is constant over
the runs of a dataset only with negligible probability; leaves that carry
the time or a random run id are dropped.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from release_specs import (
    BY_SEX,
    FULL_DOMAIN,
    NEAR,
    SEX,
    people_dataset,
    release,
    spec_toml,
)

from blowfish_privacy import registry
from blowfish_privacy.cli import main
from blowfish_privacy.release import Ledger

RUNS = 3
CONFIRM = 12
EPS = 0.05

POLICIES = {
    "full": FULL_DOMAIN,
    "line": {"secrets": "line"},
    "attribute": {"secrets": "attribute"},
    "partition": BY_SEX,
    "distance": {**NEAR, "theta": 2},
}

#: registered kind -> {harness kind: (attributes, options, takes a policy)}; the harness kind names are also
#: the seeded-output cases (tests/data/seeded_outputs.json), so they stay as they are.
KIND_CASES = {
    "histogram": {"histogram": (["sex", "age"], {}, True)},
    "cdf": {
        "cdf_oh": (["age"], {"mechanism": "ordered_hierarchical", "fanout": 2, "ranges": [[2, 5]],
                             "quantiles": [0.5]}, True),
        "cdf_ordered": (["age"], {"mechanism": "ordered"}, True),
        "cdf_optimized": (["age"], {"mechanism": "optimized", "ranges": [[2, 5]], "quantiles": [0.5]}, True),
        "cdf_hierarchical": (["age"], {"mechanism": "hierarchical"}, True),
        "cdf_identity": (["age"], {"mechanism": "identity"}, True),
    },
    "pufferfish_sum": {"pufferfish_sum": (["age"], {"absolute_error": 2}, False)},
    "dawa": {"dawa": (["age"], {}, False)},
    "privelet": {"privelet": (["age"], {}, False)},
    "kmeans": {
        "kmeans": (["age", "hours"], {"k": 2}, True),
        "kmeans_sulq": (["age", "hours"], {"k": 2, "method": "sulq", "iterations": 2}, True),
    },
}
#: A registered kind with no entry above is attacked with its defaults on one attribute under a policy.
DEFAULT_CASE = (["age"], {}, True)


def _harness_kinds() -> dict[str, tuple]:
    """harness kind -> (attributes, options, takes a policy, registered kind), for every registered kind."""
    out = {}
    for kind in registry.kinds():
        for name, case in KIND_CASES.get(kind, {kind: DEFAULT_CASE}).items():
            out[name] = (*case, kind)
    return out


KINDS = _harness_kinds()

# case -> (release extras, dataset extras, out-of-domain rows)
CASES = {
    "plain": ({}, {}, False),
    "where_age": ({"where": {"age": 9}}, {}, False),  # the selection empties on the neighbour
    "where_sex": ({"where": {"sex": "f"}}, {}, False),
    "clamp": ({}, {"invalid": "clamp"}, True),
    "drop": ({}, {"invalid": "drop"}, True),
    "default": ({}, {}, True),  # ordinal values clamped, unknown labels dropped
    # an explicit domain check: refused on both neighbours, each run a disclosure in the ledger
    "error": ({}, {"invalid": "error", "allow_disclosures": True}, True),
    # the same on a dataset that allows no disclosures: refused before the data are read, the ledger untouched
    "error_refused": ({}, {"invalid": "error"}, True),
}

#: Ordinal attributes 0..9 (a record moves from 9 to 8 between the neighbours).
TEN = {"type": "ordinal", "low": 0, "high": 9}


def _rows(move: bool, bad: bool) -> list[tuple]:
    """Every age 0..8 several times, one record at age 9 (moved to 8 by the neighbour)."""
    rng = np.random.default_rng(11)
    rows = []
    for age in range(9):
        for _ in range(6):
            rows.append((age, rng.choice(["f", "m"]), int(rng.integers(0, 10))))
    rows.append((8 if move else 9, "f", 4))
    if bad:
        rows.append((55, "m", 3))  # outside the domain, in both datasets
    return rows


def _spec(kind: str, policy: str, case: str) -> str:
    attrs, options, uses_policy, real_kind = KINDS[kind]
    where, ds_extra, _ = CASES[case]
    rel = release("r", real_kind, attrs, EPS, "p" if uses_policy else None, **where, **options)
    policies = {"p": POLICIES[policy]}
    if kind == "pufferfish_sum":  # Pufferfish protects the pairs within absolute_error: the dataset's policy
        policies = {"p": {**NEAR, "theta": 2, "attributes": ["age"]}}
        ds_extra = {**ds_extra, "protect": "p"}
    return spec_toml(people_dataset("data.csv", 1, **ds_extra), {"age": TEN, "sex": SEX, "hours": TEN},
                     policies, [rel])


_VOLATILE = {"time", "spec", "ledger", "out_dir", "library_version"}


def _flatten(obj, prefix, out):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in _VOLATILE:
                continue
            _flatten(v, f"{prefix}.{k}", out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = obj


def _run_once(tmp: Path, spec: str, rows, plots: bool = False) -> dict:
    tmp.mkdir(parents=True)
    (tmp / "spec.toml").write_text(spec)
    with open(tmp / "data.csv", "w") as fh:
        fh.write("age,sex,hours\n")
        for a, s, h in rows:
            fh.write(f"{a},{s},{h}\n")
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(tmp)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["release", "spec.toml", "--ledger", "l.sqlite", "--new-ledger", "--out", "out", "--quiet"]
                        + ([] if plots else ["--no-plots"]))
    finally:
        os.chdir(old)
    leaves = {"exit": code}
    for k, line in enumerate(out.getvalue().splitlines() + err.getvalue().splitlines()):
        leaves[f"console[{k}]"] = line
    if (tmp / "out").exists():
        for f in sorted((tmp / "out").iterdir()):
            if f.suffix == ".json":
                _flatten(json.loads(f.read_text()), f.name, leaves)
            elif f.suffix == ".csv":
                for k, line in enumerate(f.read_text().splitlines()):
                    leaves[f"{f.name}:{k}"] = line
            else:
                leaves[f"file:{f.name}"] = True
    if (tmp / "l.sqlite").exists():
        summary = Ledger(tmp / "l.sqlite").summary()
        for ds in summary.values():
            for e in ds["entries"]:
                e.pop("time", None)
                if e.get("parallel_group"):
                    e["parallel_group"] = e["parallel_group"].split("@")[0]
        _flatten(summary, "ledger", leaves)
    return leaves


def _collect(tmp: Path, spec: str, bad: bool, start: int, runs: int, sets=None, plots: bool = False):
    sets = sets or [{}, {}]
    for d, move in enumerate((False, True)):
        per_run = [_run_once(tmp / f"{'d2' if move else 'd1'}-{r}", spec, _rows(move, bad), plots)
                   for r in range(start, start + runs)]
        keys = set().union(*per_run) | set(sets[d])
        for k in keys:
            sets[d].setdefault(k, set()).update(
                json.dumps(run.get(k, "<absent>"), sort_keys=True, default=str) for run in per_run)
    return sets


def _suspects(sets) -> list[str]:
    a, b = sets
    out = []
    for k in set(a) | set(b):
        va, vb = a.get(k, {'"<absent>"'}), b.get(k, {'"<absent>"'})
        if len(va) == 1 and len(vb) == 1 and va != vb:
            out.append(f"{k}: {next(iter(va))} vs {next(iter(vb))}")
    return sorted(out)


def leaks(tmp: Path, spec: str, bad: bool, runs: int = RUNS, confirm: int = CONFIRM, plots: bool = False) -> list[str]:
    """Leaves constant within each dataset's runs that differ between the neighbours.

    A leaf flagged after ``runs`` runs per dataset is confirmed with
    ``confirm`` more: a noisy leaf (say a clipped count) that was constant
    by chance varies then; a leak stays constant and different.
    """
    sets = _collect(tmp, spec, bad, 0, runs, plots=plots)
    if _suspects(sets) and confirm:
        sets = _collect(tmp, spec, bad, runs, confirm, sets, plots=plots)
    return _suspects(sets)


FAST = [
    # the cases of the issue, each kind at least once
    ("sum", "line", "where_age"),
    ("cdf_oh", "line", "where_age"),
    ("cdf_ordered", "line", "where_age"),
    ("transformed", "line", "where_age"),
    ("kmeans", "full", "where_age"),
    ("histogram", "attribute", "clamp"),
    ("histogram", "partition", "where_sex"),
    ("histogram", "attribute", "error"),
    ("histogram", "attribute", "error_refused"),
    ("cdf_oh", "line", "default"),
    ("cdf_oh", "distance", "plain"),
    ("cdf_hierarchical", "full", "plain"),
    ("cdf_identity", "full", "plain"),
    ("pufferfish_sum", "full", "plain"),
    ("dawa_transformed", "line", "plain"),
    ("matching", "line", "drop"),  # refused at plan time: drop would change the row count it publishes
    ("histogram", "line", "drop"),
    ("dawa", "full", "plain"),
    ("privelet", "full", "plain"),
    ("kmeans", "distance", "plain"),
    ("kmeans_sulq", "distance", "plain"),
]
# a registered kind with no case above still runs once in the fast set
FAST += [(name, "full", "plain") for name, (*_, kind) in KINDS.items()
         if name == kind and not any(KINDS[k][3] == kind for k, _, _ in FAST)]
ALL = [(k, p, c) for k in KINDS for p in POLICIES for c in CASES
       if not (c == "where_sex" and "sex" not in KINDS[k][0])]
SLOW = [x for x in ALL if x not in FAST]


def test_every_registered_kind_has_a_neighbour_case_in_the_fast_set():
    assert {KINDS[k][3] for k in KINDS} == set(registry.kinds())
    assert {KINDS[k][3] for k, _, _ in FAST} == set(registry.kinds())
    assert not set(KIND_CASES) - set(registry.kinds()), "cases for kinds that are not registered"


@pytest.mark.parametrize("kind,policy,case", FAST, ids=["-".join(x) for x in FAST])
def test_no_leak_between_neighbours(tmp_path, kind, policy, case):
    assert leaks(tmp_path, _spec(kind, policy, case), CASES[case][2]) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind,policy,case", SLOW, ids=["-".join(x) for x in SLOW])
def test_no_leak_between_neighbours_all(tmp_path, kind, policy, case):
    assert leaks(tmp_path, _spec(kind, policy, case), CASES[case][2]) == []


PLOTTED = [("cdf_oh", "distance", "plain"),
           pytest.param("histogram", "partition", "where_sex", marks=pytest.mark.slow,
                        id="histogram-partition-where_sex"),
           pytest.param("cdf_oh", "partition", "where_sex", marks=pytest.mark.slow, id="cdf_oh-partition-where_sex"),
           pytest.param("kmeans", "distance", "plain", marks=pytest.mark.slow, id="kmeans-distance-plain")]


@pytest.mark.slow
@pytest.mark.parametrize("kind,policy,case", PLOTTED,
                         ids=["-".join(x) if type(x) is tuple else None for x in PLOTTED])
def test_no_leak_with_plots(tmp_path, kind, policy, case):
    """With plots on: the PNG files written and any console line (e.g. a plotting library's warning)."""
    pytest.importorskip("matplotlib", reason="needs matplotlib for the plots")
    assert leaks(tmp_path, _spec(kind, policy, case), CASES[case][2], plots=True) == []


@pytest.mark.slow
def test_the_harness_catches_an_exact_count(tmp_path, monkeypatch):
    """A release that writes the selection's exact row count is reported (the harness can fail)."""
    from blowfish_privacy.release import kinds

    kind = kinds.KINDS["histogram"]
    original = kind.run

    def leaky(rel, hist, gen, plan):
        out = original(rel, hist, gen, plan)
        out.fields["rows"] = int(np.asarray(hist).sum())
        return out

    monkeypatch.setitem(kinds.KINDS, "histogram", kinds.Kind(**{**kind.__dict__, "run": leaky}))
    found = leaks(tmp_path, _spec("histogram", "line", "where_age").replace('attributes = ["sex", "age"]',
                                                                             'attributes = ["age"]'), False, runs=2,
                  confirm=2)
    assert any(".rows" in leaf for leaf in found), found
