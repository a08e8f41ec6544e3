"""The figures of a release and of ``blowfish demo``: policy, epsilon and units named, truncated axes
marked, legends off the data, the truth and the actual error where the data are public, no paper ids."""

import json

import numpy as np
import pytest

from figure_checks import all_text, legends_off_the_data, paper_ids, truncation_marked

plt = pytest.importorskip("matplotlib.pyplot")

from blowfish_privacy import Domain  # noqa: E402
from blowfish_privacy._demo_figure import demo_comparison, draw_comparison, public_cdf, range_rmse  # noqa: E402
from blowfish_privacy._citations import in_words  # noqa: E402
from blowfish_privacy.release.figures import draw_release_group, mark_truncated_axis  # noqa: E402
from blowfish_privacy.release._kinds_counts import plot_cdf  # noqa: E402
from blowfish_privacy.release.spec import parse_spec  # noqa: E402

ATTR = Domain.ordinal("capital_loss", 0, 99).attribute("capital_loss")
N = 1000


def _cdf_doc(name, model, rmse, mechanism):
    return {"name": name, "kind": "cdf", "attributes": ["capital_loss"], "privacy_model": model,
            "policy": {"name": "loss_within_10", "secrets": "DistanceThreshold(theta=10, metric='l1')"},
            "epsilon_spent": 0.5, "epsilon_requested": 0.5, "n": N, "expected_error": {"rmse": rmse},
            "mechanism_description": mechanism}


def _truth():
    hist = np.zeros(ATTR.size)
    hist[0] = 900  # most rows share one value: the CDF panel starts far above 0
    hist[40:60] = 5
    return np.cumsum(hist)


def _two_cdfs():
    rng = np.random.default_rng(1)
    truth = _truth()
    oh = _cdf_doc("loss-cdf", "Blowfish", 4.0, "Blowfish ordered hierarchical (000 Sec 7.2)")
    dp = _cdf_doc("loss-cdf-dp", "DP", 12.0, "DP baseline: hierarchical with consistency (Hay et al. 2010)")
    return [(oh, truth + rng.normal(0, 3, truth.size)), (dp, truth + rng.normal(0, 10, truth.size))], truth


def _cdf_plot(doc, cum):
    return lambda ax: plot_cdf(ax, ATTR, [(doc["mechanism_description"], cum, doc["expected_error"]["rmse"])], N)


@pytest.mark.slow
def test_release_cdfs_of_one_attribute_share_one_y_axis_and_say_policy_epsilon_units():
    releases, _ = _two_cdfs()
    drawn = draw_release_group(plt, [(doc, {"cumulative": cum}, _cdf_plot(doc, cum)) for doc, cum in releases])
    try:
        (f1, a1), (f2, a2) = drawn
        assert a1.get_ylim() == a2.get_ylim()
        assert a1.get_ylim()[0] > 0
        for fig, ax in drawn:
            text = all_text(fig)
            assert "epsilon 0.5" in ax.get_title()
            assert "rows" in ax.get_ylabel()  # the unit of a count
            assert truncation_marked(ax)
            assert legends_off_the_data(fig, [ax])
            assert not paper_ids(fig), paper_ids(fig)
        assert "policy 'loss_within_10'" in a1.get_title()
        assert "plain DP" in a2.get_title()
        # the kind's own label named the paper by id: written in words on the figure
        assert "Section 7.2 of the Blowfish paper" in all_text(f1)
    finally:
        for fig, _ in drawn:
            plt.close(fig)


@pytest.mark.slow
def test_histogram_release_names_its_policy_and_shows_its_error_in_a_panel_of_its_own():
    dom = Domain.ordinal("age", 17, 90, bin_width=5)
    attr = dom.attribute("age")
    counts = np.linspace(6000, 30, attr.size)
    doc = {"name": "age-histogram", "kind": "histogram", "attributes": ["age"], "privacy_model": "Blowfish",
           "policy": {"name": "age_within_stage", "secrets": "Partition.intervals([17, 27, 42, 62, 91])"},
           "epsilon_spent": 0.5, "expected_error": {"rmse": 5.64}}

    def plot(ax):
        ax.bar(np.arange(counts.size), counts, yerr=5.64, label="noisy count")
        ax.set_ylabel("noisy count")
        ax.legend(loc="upper right")

    (fig, ax), = draw_release_group(plt, [(doc, {"counts": counts}, plot)])
    try:
        assert "policy 'age_within_stage'" in ax.get_title() and "epsilon 0.5" in ax.get_title()
        assert ax.get_ylabel() == "noisy count (rows)"
        err = [a for a in fig.axes if a is not ax]
        assert len(err) == 1 and "% of the count" in err[0].get_ylabel()
        heights = [p.get_height() for p in err[0].patches]
        assert heights == pytest.approx(100 * 5.64 / counts)  # the error each count carries, visible at any scale
        assert legends_off_the_data(fig, fig.axes)
        assert truncation_marked(ax)
    finally:
        plt.close(fig)


def test_truncated_axis_is_marked_and_a_full_axis_is_not():
    fig, (a, b) = plt.subplots(1, 2)
    try:
        a.plot([0, 1], [46_500, 48_842])
        a.set_ylim(46_400, 49_000)
        a.set_ylabel("count")
        b.plot([0, 1], [0, 10])
        assert mark_truncated_axis(a) and not mark_truncated_axis(b)
        assert "axis starts at 46,400" in a.get_ylabel() and truncation_marked(a)
        assert "starts at" not in b.get_ylabel()
    finally:
        plt.close(fig)


@pytest.mark.slow
def test_demo_figure_draws_the_truth_and_the_actual_error_on_one_shared_axis():
    releases, truth = _two_cdfs()
    fig = draw_comparison(plt, ATTR, releases, truth)
    try:
        assert len(fig.axes) >= 4
        a1, a2 = fig.axes[0], fig.axes[1]
        assert a1.get_shared_y_axes().joined(a1, a2) and a1.get_ylim() == a2.get_ylim()
        assert truncation_marked(a1) and a1.get_ylim()[0] > 0
        text = all_text(fig)
        assert "epsilon 0.5" in text and "policy 'loss_within_10'" in text
        assert "US dollars" in text and "(people)" in text
        assert "true CDF" in text and "actual RMSE" in text and "expected RMSE" in text
        assert not paper_ids(fig), paper_ids(fig)
        assert legends_off_the_data(fig, fig.axes[:4])
        # the truth is drawn on each CDF panel: a black step equal to the true counts where it is shown
        for ax in (a1, a2):
            blacks = [l for l in ax.lines if l.get_color() == "black" and l.get_gid() != "axis-break"]
            assert len(blacks) == 1
            xs = np.asarray(blacks[0].get_xdata(), dtype=int)
            assert np.array_equal(blacks[0].get_ydata(), truth[xs])
        # the actual error panel holds released - truth of both releases, the bars the RMSE over all ranges
        errs = [l for l in fig.axes[2].lines if "actual error" in l.get_label()]
        assert len(errs) == 2
        for line, (_, cum) in zip(errs, releases):
            xs = np.asarray(line.get_xdata(), dtype=int)
            assert np.allclose(line.get_ydata(), (cum - truth)[xs])
        heights = sorted(p.get_height() for p in fig.axes[3].patches)
        assert heights == pytest.approx(sorted([4.0, 12.0] + [range_rmse(c, truth) for _, c in releases]))
    finally:
        plt.close(fig)


def test_range_rmse_is_the_mean_over_all_ranges():
    rng = np.random.default_rng(0)
    truth = np.cumsum(rng.integers(0, 9, 12)).astype(float)
    released = truth + rng.normal(0, 2, 12)
    err = np.concatenate([[0.0], released - truth])
    brute = [(err[b] - err[a]) ** 2 for a in range(13) for b in range(a + 1, 13)]  # range [a, b-1] of bins
    assert range_rmse(released, truth) == pytest.approx(np.sqrt(np.mean(brute)))


def test_public_cdf_is_the_bundled_adult_only(tmp_path):
    text = """
[dataset]
id = "t"
bundled = "adult"
total_epsilon = 1
protect = "p"
[domain.capital_loss]
type = "ordinal"
low = 0
high = 4356
[policies.p]
secrets = "distance_threshold"
theta = 100
[[release]]
name = "c"
kind = "cdf"
attributes = ["capital_loss"]
policy = "p"
epsilon = 0.5
"""
    spec = parse_spec(text, "t")
    cdf = public_cdf(spec, spec.domain.attribute("capital_loss"))
    assert cdf[-1] == 48842 and cdf.size == 4357
    (tmp_path / "x.csv").write_text("capital_loss\n0\n")
    other = parse_spec(text.replace('bundled = "adult"', f'path = "{tmp_path / "x.csv"}"'), "t")
    assert public_cdf(other, other.domain.attribute("capital_loss")) is None


@pytest.mark.slow
def test_demo_comparison_writes_the_png_from_the_release_files(tmp_path):
    releases, truth = _two_cdfs()

    class Spec:  # what demo_comparison reads of a spec
        source = {"bundled": "elsewhere"}
        domain = Domain.ordinal("capital_loss", 0, 99)

    (oh, c1), (dp, c2) = releases
    oh = dict(oh, cumulative=list(c1))
    (tmp_path / "dp.csv").write_text("value,cumulative\n" + "".join(f"{i},{v}\n" for i, v in enumerate(c2)))
    dp = dict(dp, vectors_file="dp.csv")
    path = demo_comparison(tmp_path, Spec(), oh, dp)
    assert path == tmp_path / "demo-comparison.png" and path.stat().st_size > 20_000


def test_paper_ids_in_words():
    assert in_words("sequential composition, 000 Thm 4.1; parallel, Thm 4.2") == (
        "sequential composition, Theorem 4.1 of the Blowfish paper; parallel, Theorem 4.2")
    assert in_words("001 Fig 4/5 and 003 Lemma 7.1") == (
        "Figures 4 and 5 of the data-dependent Blowfish report and Lemma 7.1 of the Pufferfish paper")
    assert in_words("Kifer, Machanavajjhala, PODS 2012 (003), Sec 7.1") == "Kifer, Machanavajjhala, PODS 2012, Section 7.1"
    assert in_words("Hay et al. 2010, Sec 3") == "Hay et al. 2010, Sec 3"  # no id: nothing to translate


@pytest.mark.slow
def test_demo_writes_its_figures(tmp_path):
    from blowfish_privacy.cli import main

    assert main(["demo", "--out", str(tmp_path), "--quiet"]) == 0
    for name in ("demo-comparison.png", "age-histogram.png", "capital-loss-cdf.png", "capital-loss-cdf-dp.png"):
        assert (tmp_path / name).stat().st_size > 10_000
    assert json.loads((tmp_path / "age-histogram.json").read_text())["plot"] == "age-histogram.png"


def test_a_right_hand_axis_in_other_units_is_marked_cut_where_the_left_one_is():
    fig, ax = plt.subplots()
    try:
        ax.plot([0, 1], [950, 1000])
        ax.set_ylim(950, 1000)
        ax.set_ylabel("rows")
        sec = ax.secondary_yaxis("right", functions=(lambda y: y / 1000, lambda f: f * 1000))
        sec.set_ylabel("fraction of rows")
        assert mark_truncated_axis(ax)
        assert sec.get_ylabel() == "fraction of rows\n(axis starts at 0.95, not at 0)"
        assert len([line for line in ax.lines if line.get_gid() == "axis-break"]) == 4  # both sides
        mark_truncated_axis(ax)  # marking twice adds nothing to the label
        assert sec.get_ylabel().count("not at 0") == 1
    finally:
        plt.close(fig)
