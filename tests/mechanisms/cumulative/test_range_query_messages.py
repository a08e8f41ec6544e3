"""range_query refuses a value outside the domain by the rule it breaks, never quoting the value or a record."""

import re

import numpy as np
import pytest

from blowfish_privacy import Domain, Generator, Policy, mechanisms, secrets


def _release(domain=True):
    hist = np.array([0, 0, 5, 0, 0, 5, 0, 0, 0, 0])
    if domain:
        return mechanisms.ordered(hist, Policy(Domain.ordinal("age", 20, 29), secrets.Line()), 1e6, Generator(seed=1))
    return mechanisms.hierarchical(hist, 1e6, Generator(seed=1))


def _message(call, exc=ValueError) -> str:
    with pytest.raises(exc) as info:
        call()
    msg = str(info.value)
    assert "record" not in msg and not re.search(r"\brows?\b", msg), msg
    return msg


@pytest.mark.parametrize("lo,hi,name", [(-3, 25, "lo"), (21, 5077, "hi"), ([22, -3], [25, 26], "lo"),
                                        (np.array([21, 22]), np.array([23, 5077]), "hi")])
def test_outside_the_domain_names_the_rule(lo, hi, name):
    r = _release()
    msg = _message(lambda: r.range_query(lo, hi))
    assert msg.startswith(f"{name}: a value of attribute 'age' lies outside [20, 29]"), msg
    assert "-3" not in msg and "5077" not in msg


def test_not_an_integer_names_the_rule():
    msg = _message(lambda: _release().range_query(22.5, 25))
    assert msg.startswith("lo: a value of attribute 'age' is not an integer") and "22.5" not in msg


@pytest.mark.parametrize("lo,hi,name", [(-3, 5, "lo"), (2, 5077, "hi"), (np.array([1, 2], dtype=np.uint64),
                                                                      np.array([3, 2**64 - 1], dtype=np.uint64), "hi")])
def test_bin_indices_without_a_domain(lo, hi, name):
    r = _release(domain=False)
    msg = _message(lambda: r.range_query(lo, hi))
    assert msg.startswith(f"{name} must be bin indices in [0, 9]: an index lies outside"), msg
    for leak in ("-3", "5077", str(2**64 - 1), "-1"):
        assert leak not in msg


def test_answers_inside_the_domain_are_unchanged():
    r = _release()
    assert r.range_query(22, 25) == pytest.approx(10, abs=1e-6)
    np.testing.assert_allclose(r.range_query([20, 22], [21, 29]), [0, 10], atol=1e-6)
    assert _release(domain=False).range_query(2, 5) == pytest.approx(10, abs=1e-6)
