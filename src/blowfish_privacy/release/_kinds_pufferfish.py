"""The ``pufferfish_sum`` release kind: a sum protected to an absolute or relative error.

Kifer, Machanavajjhala, A Rigorous and Customizable Framework for Privacy
(Pufferfish), PODS 2012, 003 Sec 7.1; registered in :data:`.kinds.KINDS`.
"""

from __future__ import annotations

from .. import mechanisms
from ..errors import OptionError
from ._kinds_base import Output, common_fields, is_num, one_ordinal, rmse_fields


# -- Pufferfish sum ----------------------------------------------------------------
def puff_validate(options, domain, policy):
    one_ordinal(domain, "pufferfish_sum")
    given = [k for k in ("absolute_error", "relative_error") if k in options]
    if len(given) != 1:
        raise OptionError("absolute_error", "give exactly one of absolute_error (k > 0) or relative_error (r > 0)")
    key = given[0]
    if not is_num(options[key]) or options[key] <= 0:
        raise OptionError(key, f"must be a number > 0, got {options[key]!r}")
    if key == "relative_error" and domain.attributes[0].low <= 0:
        raise OptionError(key, f"needs values > 0 (logarithms); attribute {domain.names[0]!r} allows "
                          f"{domain.attributes[0].low}; use absolute_error")
    out = {key: float(options[key])}
    if "granularity" in options:
        g = options["granularity"]
        if not is_num(g) or g <= 0:
            raise OptionError("granularity", f"must be a number > 0, got {g!r}")
        out["granularity"] = float(g)
    return out


def puff_plan(rel, crossing):
    attr = rel.domain.attributes[0]
    # the declared range of the attribute, never the data, fixes the grid margin
    return mechanisms.plan_pufferfish_sum(rel.epsilon, bounds=(attr.low, attr.high), **rel.options)


def puff_run(rel, column, gen, plan):
    r = plan.measure(column, gen)
    fields = {
        "value": r.value, "geometric_mean": r.geometric_mean, "n": r.n,
        **common_fields(r),
        "granularity": r.granularity, "noise_scale": str(r.scale),
        "expected_error": {"variance": r.variance, **rmse_fields(r.variance, f"the sum, in units of {rel.attributes[0]}")},
        "guarantee": r.guarantee,
    }
    return Output(fields)
