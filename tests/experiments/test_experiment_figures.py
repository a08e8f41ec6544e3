"""The experiments' figures, checked on their objects: what the methods and the metric are, in words;
legends off the data; one readable DPBench panel per epsilon; no paper ids."""

import itertools

import numpy as np
import pytest

from figure_checks import all_text, legends_off_the_data, paper_ids

plt = pytest.importorskip("matplotlib.pyplot")

from blowfish_privacy import Domain, Policy, secrets  # noqa: E402
from blowfish_privacy.experiments import histograms, kmeans, range_queries  # noqa: E402
from blowfish_privacy.experiments._dpbench_algorithms import ALGORITHMS  # noqa: E402
from blowfish_privacy.experiments._dpbench_tables import METRIC, figure_rows  # noqa: E402


@pytest.mark.slow
def test_range_queries_figure_explains_its_methods_and_policy():
    dom = Domain.ordinal("capital_loss", 0, 99)
    labels = ["OH theta=1", "OH theta=10", "OH theta=|T| (hierarchical)", "DP identity"]
    rows = [{"method": m, "epsilon": e, "mse": (i + 1) * 10 / e} for i, m in enumerate(labels) for e in (0.1, 0.5, 1.0)]
    policies = {m: Policy(dom, secrets.DistanceThreshold(int(m.split("=")[1]))) for m in labels[:2]}
    fig = range_queries.figure(rows, n_bins=100, queries=50, repetitions=2, policies=policies)
    try:
        ax = fig.axes[0]
        text = all_text(fig)
        legend = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
        assert len(legend) == 4 and not any(t.startswith("OH") for t in legend)  # the abbreviation written out
        assert "G^(d,theta)" not in text and "distance-threshold policy" in ax.get_title()
        assert "within theta dollars" in ax.get_title()
        assert "epsilon" in ax.get_xlabel() and "root mean squared error" in ax.get_ylabel()
        assert "(people, log scale)" in ax.get_ylabel()
        assert "OH theta" not in text
        assert legends_off_the_data(fig, [ax])
        assert not paper_ids(fig) and "000" not in text
    finally:
        plt.close(fig)


def _dpbench_rows(epsilons):
    rng = np.random.default_rng(0)
    algs = [a for (d, a) in ALGORITHMS if d == 1][:8] + ["oh_theta4", "optimized_line"]
    rows = []
    for a, ds, sc, e in itertools.product(algs, ["adult", "hepth"], [1000, 100_000], epsilons):
        info = ALGORITHMS[(1, a)]
        rows.append({"dataset": ds, "dims": 1, "scale": sc, "domain": 256, "workload": "random",
                     "ranges": "dpbench", "neighbours": "bounded", "epsilon": e, "algorithm": a,
                     "policy": info.policy, "privacy": info.privacy, "repetition": 0,
                     "scaled_l1": float(rng.lognormal(-6, 1)), "mse": 1.0})
    return rows, algs


@pytest.mark.slow
def test_dpbench_figure_has_one_readable_panel_per_epsilon_and_names_its_metric():
    rows, algs = _dpbench_rows([0.1, 1.0, 10.0])
    fig = figure_rows(rows, 1)
    try:
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert len(panels) == 3
        assert sorted(ax.get_title() for ax in panels) == ["epsilon 0.1", "epsilon 1", "epsilon 10"]
        assert all(METRIC in ax.get_xlabel() for ax in panels)
        assert "scaled L1 error" in METRIC and "divided by the number of records" in METRIC
        ticks = panels[0].get_yticklabels()  # the panels share the rows: the names stand at the left
        assert len(ticks) == len(algs) and all(t.get_rotation() == 0 for t in ticks)  # read across, not up
        # the algorithm names carry their privacy model and policy
        names = [t.get_text() for t in panels[0].get_yticklabels()]
        assert any("[Blowfish: distance threshold 4]" in n for n in names) and any("[DP]" in n for n in names)
        assert legends_off_the_data(fig, panels)
        assert not paper_ids(fig)
    finally:
        plt.close(fig)


@pytest.mark.slow
def test_dpbench_figure_wraps_many_epsilons_into_rows_of_three():
    rows, _ = _dpbench_rows([0.01, 0.1, 1.0, 10.0])
    fig = figure_rows(rows, 1)
    try:
        assert len([ax for ax in fig.axes if ax.get_visible()]) == 4
    finally:
        plt.close(fig)


@pytest.mark.slow
def test_kmeans_figure_keeps_its_legend_off_the_curves_and_names_no_paper_ids():
    rows = [{"dataset": "synthetic", "policy": p, "epsilon": e, "sum_sensitivity": s, "mechanism": "grid",
             "ratio_mean": 1 + s / e / 10, "ratio_q25": 1 + s / e / 12, "ratio_q75": 1 + s / e / 8,
             "repetitions": 2, "k": 4, "iterations": 10, "paper_sum_sensitivity": 2.0}
            for p, s in (("FullDomain (DP)", 2.0), ("L1 theta=2", 0.9)) for e in (0.5, 1.0)]
    fig = kmeans.figure(rows)
    try:
        ax = fig.axes[0]
        assert legends_off_the_data(fig, [ax])
        assert "epsilon" in ax.get_xlabel() and "ratio" in ax.get_ylabel()
        assert not paper_ids(fig)
    finally:
        plt.close(fig)


@pytest.mark.slow
def test_kmeans_figure_names_identical_curves_together_with_plain_ticks():
    # FullDomain and a wide threshold give the same curve (same sensitivity, same seeded noise): one line
    # names both, the DP line is not hidden under another; one run is "1 run"
    rows = [{"dataset": "synthetic", "policy": p, "epsilon": e, "sum_sensitivity": s, "mechanism": "grid",
             "ratio_mean": 1.2 + s / e / 10, "ratio_q25": 1.2 + s / e / 12, "ratio_q75": 1.2 + s / e / 8,
             "repetitions": 1, "k": 4, "iterations": 10, "paper_sum_sensitivity": 2.0}
            for p, s in (("FullDomain (DP)", 2.0), ("L1 theta=20", 2.0), ("L1 theta=2", 0.9)) for e in (0.5, 1.0)]
    fig = kmeans.figure(rows)
    try:
        ax = fig.axes[0]
        legend = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
        curves = [line for line in ax.get_lines() if line.get_gid() != "axis-break"]
        assert len(legend) == 2 and len(curves) == 2
        assert "FullDomain (plain DP)" in legend[0] and "theta = 20" in legend[0] and "identical" in legend[0]
        assert "1 run " in ax.get_title() and "1 runs" not in ax.get_title()
        fig.canvas.draw()
        ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert ticks and not any("times" in t or "^" in t for t in ticks)
        lo, hi = ax.get_ylim()
        assert lo > 1.0 and "not at 0" in ax.get_ylabel()  # fitted to the data, the cut axis said
        assert hi < 1.2 + 2.0 / 0.5 / 8 + 0.2
    finally:
        plt.close(fig)


@pytest.mark.slow
def test_histograms_figure_names_the_report_in_words_and_shows_rmse():
    rows = [{"figure": f, "dataset": d, "method": m, "epsilon": e, "mse": 100.0 / e ** 2, "domain": n}
            for f, d, n, methods in (("fig4", "MEDCOST", 4096, histograms.FIG4_METHODS),
                                     ("fig5", "INCOME/2", 2048, histograms.FIG5_METHODS))
            for m in methods for e in (0.01, 0.1)]
    fig = histograms.figure(rows)
    try:
        titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
        assert "Figure 4 of the data-dependent Blowfish report" in titles[0] and "MEDCOST" in titles[0]
        assert "Figure 5 of the data-dependent Blowfish report" in titles[1] and "INCOME, first half" in titles[1]
        text = all_text(fig)
        assert "Fig " not in text and "MSE" not in text and not paper_ids(fig)
        assert all("root mean squared error" in ax.get_ylabel() for ax in fig.axes if ax.get_title())
        ax = fig.axes[0]
        assert max(ax.get_lines()[0].get_ydata()) == pytest.approx(1000.0)  # sqrt(100 / 0.01^2)
        fig.canvas.draw()
        assert [t.get_text() for t in ax.get_xticklabels()] == ["0.01", "0.1"]
    finally:
        plt.close(fig)
