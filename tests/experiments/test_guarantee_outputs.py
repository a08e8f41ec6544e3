"""Every experiment shows the guarantee beside its gains: the lines, tables and captions they print."""

from __future__ import annotations

import math

import numpy as np
import pytest

from blowfish_privacy.experiments import histograms, kmeans, range_queries
from blowfish_privacy.experiments._dpbench_algorithms import ALGORITHMS, policy_of
from blowfish_privacy.experiments._dpbench_report import headline_markdown
from blowfish_privacy.experiments._output import caption_text, guarantee_block


def _row(alg, dims=1, domain=4096, eps=0.1):
    return {"dataset": "A", "dims": dims, "scale": 1000, "domain": domain, "workload": "random",
            "epsilon": eps, "algorithm": alg, "repetition": 0, "scaled_l1": 0.1}


def test_dpbench_headline_shows_each_policys_guarantee_beside_dp():
    md = headline_markdown([_row(a) for a in ("hb", "ordered", "oh_theta4", "oh_theta64")], 1)
    section = md[md.index("What each policy's gain costs, at epsilon 0.1"):md.index("Every algorithm")]
    lines = section.splitlines()
    assert "| d_G | bounded DP | distance threshold 4 | distance threshold 64 | line |" in lines
    assert ("| 5 | 1.11 (every pair) | 1.65 (\\|x - y\\| in 17..20) | 1.65 (\\|x - y\\| in 257..320) | "
            "1.65 (values 5 apart) |") in lines
    row50 = next(l for l in lines if l.startswith("| 50 |"))
    assert f"{math.exp(5):.3g} (values 50 apart)" in row50
    assert "(d = 4095: values 4095 apart)" in section and "(d = 1024: " in section and "(d = 64: " in section
    assert "| unbounded | none | none | none | none |" in lines
    # the table follows the epsilon of the per-algorithm table
    md = headline_markdown([_row(a, eps=1.0) for a in ("hb", "ordered")], 1, epsilon=1.0)
    assert "| 1 | 2.72 (every pair) | 2.72 (values 1 apart) |" in md


@pytest.mark.slow
def test_dpbench_headline_2d_shows_the_unprotected_rows():
    md = headline_markdown([_row(a, dims=2, domain=128) for a in ("hb2d", "transformed_grid",
                                                                   "axis_cumulative_rowline")], 2)
    assert "| 10 | 1.11 (every pair) | 2.72 (cells 10 steps apart (L1)) | 2.72 (values 10 edges apart) |" in md
    assert "(d = 254: cells 254 steps apart (L1))" in md and "(d = 127: values 127 edges apart)" in md
    assert "| unbounded | none | none | inf (values in different components of the graph) |" in md


def test_dpbench_owner_helpers():
    pols = {name: policy_of(ALGORITHMS[(1, name)], 4096) for name in ("ordered", "oh_theta4")}
    text = guarantee_block(pols, [0.1])
    assert "ordered, eps 0.1: d=1 1.11, d=2 1.22, d=5 1.65, d=10 2.72, d=50 148, largest d=4095" in text
    assert "oh_theta4, eps 0.1: d=1 1.11, d=2 1.22, d=5 1.65, d=10 2.72, d=50 148, largest d=1024" in text
    assert text.splitlines()[-1] == "  DP, eps 0.1: 1.11 for every pair"
    half = caption_text(pols, 0.1, dp_epsilon=lambda e: e / 2)
    assert half.splitlines()[-1] == "  DP baselines at eps 0.05: 1.05 for every pair"


@pytest.mark.slow
def test_range_queries_print_the_guarantee_of_each_theta(tmp_path, capsys):
    hist = np.random.default_rng(0).integers(0, 5, size=100)
    res = range_queries.run(None, thetas=(1, 4, "full"), epsilons=(0.1,), repetitions=1, queries=50,
                            progress=False, hist=hist)
    text = res.guarantees([0.1])
    assert "OH theta=1, eps 0.1: d=1 1.11, d=2 1.22, d=5 1.65, d=10 2.72, d=50 148, largest d=99" in text
    assert "OH theta=4, eps 0.1: d=1 1.11, d=2 1.22, d=5 1.65, d=10 2.72, largest d=25 12.2" in text
    assert "|T|" not in text  # theta = |T| is the complete graph: DP's own line
    range_queries.main(["--out", str(tmp_path), "--repetitions", "1", "--queries", "50", "--epsilons", "0.5",
                        "--thetas", "100", "full", "--quiet"])
    out = capsys.readouterr().out
    assert "The guarantee in numbers" in out and "OH theta=100, eps 0.5: d=1 1.65" in out
    assert "DP, eps 0.5: 1.65 for every pair" in out


def test_histograms_table_compares_with_half_epsilon_dp():
    hist = np.random.default_rng(1).integers(0, 9, size=256)
    res = histograms.run(None, data={"INCOME": hist}, epsilons=(0.1,), repetitions=1, figures=("fig5",),
                         progress=False)
    table = res.table()
    assert "Line on 128 values, eps 0.1: d=1 1.11, d=2 1.22, d=5 1.65, d=10 2.72, d=50 148, largest d=127" in table
    assert "DP baselines at eps 0.05: 1.05 for every pair" in table


def test_kmeans_prints_the_guarantee_of_each_policy():
    res = kmeans.run(None, epsilons=(0.5,), repetitions=1, thetas=(10, 2), progress=False)
    text = res.guarantees([0.5])
    assert text.startswith("synthetic: The guarantee in numbers")
    # 4-D grid 0..20: L1 distance up to 80, theta 10 -> 8 steps, theta 2 -> 40; Attribute: 4 attributes
    assert "L1 theta=10, eps 0.5: d=1 1.65, d=2 2.72, d=5 12.2, largest d=8 54.6" in text
    assert f"L1 theta=2, eps 0.5: d=1 1.65, d=2 2.72, d=5 12.2, d=10 148, largest d=40 {math.exp(20):.3g}" in text
    assert "Attribute, eps 0.5: d=1 1.65, d=2 2.72, largest d=4 7.39" in text
    assert "FullDomain" not in text and "DP, eps 0.5: 1.65 for every pair" in text
