"""``blowfish explain`` prints the guarantee in numbers for a spec's protection policy and each release."""

import math

from blowfish_privacy import Domain, Policy, secrets
from blowfish_privacy.cli import main
from blowfish_privacy.explain import explain
from blowfish_privacy.policy.guarantee import guarantee_table

SPEC = """
[dataset]
id = "tiny"
path = "people.csv"
total_epsilon = 1.0
protect = "both"

[domain.age]
type = "ordinal"
low = 0
high = 9

[domain.zone]
type = "ordinal"
low = 0
high = 5

[policies.near]
secrets = "line"

[policies.blocks]
secrets = "partition"
intervals = [0, 3, 6]

[policies.both]
secrets = "intersection"
of = ["near", "blocks"]

[[release]]
name = "ages"
kind = "histogram"
attributes = ["age"]
policy = "near"
epsilon = 0.5

[[release]]
name = "zones"
kind = "histogram"
attributes = ["zone"]
policy = "blocks"
epsilon = 0.3
"""


def _spec(tmp_path):
    (tmp_path / "people.csv").write_text("age,zone\n1,2\n4,5\n")
    path = tmp_path / "spec.toml"
    path.write_text(SPEC)
    return path


def test_explain_prints_the_guarantee_tables(tmp_path, capsys):
    assert main(["explain", str(_spec(tmp_path))]) == 0
    out = capsys.readouterr().out
    # the dataset's protection at the spec's epsilon 0.8: the line on age, the partition on zone
    head, rest = out.split("== policy 'near'", 1)
    assert "protection policy 'both', at epsilon 0.8" in head
    e = lambda x: f"{math.exp(x):.3g}"  # noqa: E731
    for d in (1, 2, 5):
        assert f"\n  {d} " in head and e(0.8 * d) in head
    assert "largest: 9" in head and e(0.8 * 9) in head
    assert "unbounded" in head and "values in different intervals (zone)" in head
    assert "values 5 apart (age)" in head and "DP " in head
    assert "At the dataset's whole budget (epsilon 1)" in head
    assert "both, eps 1: d=1 2.72, d=2 7.39, d=5 148, largest d=9 8.1e+03; unbounded (inf)" in head
    # each release: its own table in its explanation, and one line in the plan section
    assert "line: Line() on 10 values, epsilon 0.5" in rest
    assert "partition: Partition.intervals([0, 3, 6]) on 6 values, epsilon 0.3" in rest
    assert ("in numbers: near, eps 0.5: d=1 1.65, d=2 2.72, d=5 12.2, largest d=9 90" in rest)
    assert ("in numbers: blocks, eps 0.3: d=1 1.35; unbounded (inf) for values in different intervals; "
            "DP: 1.35 for every pair") in rest


def test_python_explain_has_the_table():
    p = Policy(Domain.ordinal("x", 0, 9), secrets.Partition.intervals([0, 5, 10]))
    ex = explain(p, 0.5)
    assert ex.guarantee == guarantee_table(p, 0.5)
    assert ex.guarantee.unbounded and ex.guarantee.distances == (1, math.inf)
    text = str(ex)
    assert "unbounded  inf" in text and "DP         1.65" in text


def test_explain_a_policy_whose_distances_are_too_costly_to_compute():
    # L2 threshold on a 10^4 x 10^4 grid: d_G is beyond the dynamic program's limit; explain used to raise
    from blowfish_privacy import Ordinal

    p = Policy(Domain([Ordinal("a", 0, 9999), Ordinal("b", 0, 9999)]), secrets.DistanceThreshold(1.5, "l2"))
    ex = explain(p, 0.5)
    assert ex.pairs == [] and not ex.guarantee.computed
    text = str(ex)
    assert "distances not computed" in text and "no protected pair" not in text
