"""The Markdown headline tables of the DPBench command, on rows with known errors."""

from __future__ import annotations

import math

from blowfish_privacy.experiments._dpbench_report import headline_markdown


def _row(alg, dataset, scale, eps, err, rep=0, dims=1, workload="random"):
    return {"dataset": dataset, "dims": dims, "scale": scale, "domain": 4096, "workload": workload,
            "epsilon": eps, "algorithm": alg, "repetition": rep, "scaled_l1": err}


def test_winners_and_ratios_are_per_data_set_geometric_means():
    rows = []
    # data set A: hb best (0.1); data set B: dawa best (0.2); ordered 0.01 and 0.05
    for alg, a, b in [("hb", 0.1, 0.4), ("dawa", 0.3, 0.2), ("ordered", 0.01, 0.05), ("identity", 1.0, 1.0)]:
        rows += [_row(alg, "A", 1000, 0.1, a), _row(alg, "B", 1000, 0.1, b)]
        # a second repetition with the same values, and another workload that must be ignored
        rows += [_row(alg, "A", 1000, 0.1, a, rep=1), _row(alg, "B", 1000, 0.1, b, rep=1)]
        rows += [_row(alg, "A", 1000, 0.1, 99.0, workload="prefix")]
    md = headline_markdown(rows, 1)
    lines = md.splitlines()
    win = next(l for l in lines if l.startswith("| 0.1 | 1e+03"))
    # the best DP baseline by the geometric mean over data sets: hb sqrt(0.04) = 0.2,
    # dawa sqrt(0.06) = 0.245
    assert "hb 2.0e-02" not in win and "| hb 0.2 |" in win
    # ordered's ratio: per data set against that data set's best DP: 0.01/0.1, 0.05/0.2
    expect = math.sqrt(0.1 * 0.25)
    assert f"ordered {expect:.2g}x" in win
    table = md[md.index("Every algorithm"):]
    assert "| identity | DP | 1 |" in table
    assert f"| ordered | line | {math.sqrt(0.01 * 0.05):.1e} ({expect:.2g}x) |" in table
    assert "2 repetitions" in md and "2 data sets" in md


def test_no_rows_gives_an_empty_string():
    assert headline_markdown([], 1) == ""
    assert headline_markdown([_row("hb", "A", 1000, 0.1, 0.1)], 2) == ""
