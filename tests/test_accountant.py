from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy import Accountant, Generator, mechanisms
from blowfish_privacy.errors import BudgetExceededError, UnsupportedPolicyError


def test_sequential_composition_adds_up_exactly():
    acct = Accountant(1.0)
    acct.spend(0.25, label="a")
    acct.spend(Fraction(1, 2), label="b")
    assert acct.spent_exact == Fraction(3, 4)
    assert acct.remaining == 0.25
    assert [e.label for e in acct.entries] == ["a", "b"]


def test_overspend_is_refused_and_nothing_is_spent():
    acct = Accountant(1.0)
    acct.spend(0.75)
    with pytest.raises(BudgetExceededError, match="remains"):
        acct.spend(0.5, label="too much")
    assert acct.spent == 0.75
    assert len(acct.entries) == 1
    with pytest.raises(BudgetExceededError):
        acct.check(0.3)
    acct.check(0.25)


def test_float_spends_are_taken_at_their_binary_value_and_strings_as_decimals():
    acct = Accountant(1.0)
    for _ in range(9):
        acct.spend(0.1)
    with pytest.raises(BudgetExceededError):
        acct.spend(0.1)  # 10 x float(0.1) > 1
    acct2 = Accountant("1")
    for _ in range(10):
        acct2.spend("0.1")
    assert acct2.remaining_exact == 0


def test_spending_a_result_uses_its_exact_epsilon():
    r = mechanisms.laplace([1, 2], sensitivity=1, epsilon=0.1, generator=Generator(seed=1))
    acct = Accountant(1.0)
    for _ in range(10):
        acct.spend(r)
    assert acct.spent_exact <= 1


def test_parallel_composition_costs_the_maximum():
    acct = Accountant(1.0)
    with acct.parallel(label="regions") as g:
        g.spend(0.5, ids=[1, 2, 3])
        g.spend(0.75, ids=np.array([4, 5]))
        g.spend(0.25, ids=[6])
    assert acct.spent_exact == Fraction(3, 4)
    (entry,) = acct.entries
    assert entry.kind == "parallel" and len(entry.parts) == 3


def test_parallel_overlap_and_overspend():
    acct = Accountant(1.0)
    with acct.parallel() as g:
        g.spend(0.5, ids=[1, 2])
        with pytest.raises(ValueError, match="overlaps"):
            g.spend(0.5, ids=[2, 3])
        with pytest.raises(BudgetExceededError):
            g.spend(1.5, ids=[7])
        with pytest.raises(ValueError, match="repeated"):
            g.spend(0.1, ids=[8, 8])
    assert acct.spent == 0.5
    with pytest.raises(ValueError, match="closed"):
        g.spend(0.1, ids=[9])


def test_parallel_refused_with_constraints():
    class FakePolicy:
        constraints = ("some count",)

    with pytest.raises(UnsupportedPolicyError):
        Accountant(1.0, policy=FakePolicy()).parallel()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_bad_total(bad):
    with pytest.raises(ValueError, match="total_epsilon"):
        Accountant(bad)


def test_negative_spend_is_refused():
    with pytest.raises(ValueError, match="epsilon"):
        Accountant(1.0).spend(-0.1)
