"""Linear strategies optimised for a policy's sensitivity (HDMM's templates calibrated by exact edge scans)."""

from ._bounds import dp_lower_bound, linear_lower_bound
from ._kron import kronecker_error, plan_kronecker
from ._kron_sensitivity import kronecker_sensitivity
from ._marginals_algebra import marginals_error
from ._marginals_optimise import optimize_marginals
from ._marginals_plan import plan_marginals
from ._marginals_sensitivity import marginals_sensitivity
from .optimized import hierarchical_strategy, optimize_p_identity, plan_optimized, plan_optimized_cdf, plan_strategy, prefix_strategy, strategy_error, strategy_sensitivity

__all__ = ["dp_lower_bound", "linear_lower_bound", "kronecker_error", "kronecker_sensitivity", "plan_kronecker", "marginals_error", "marginals_sensitivity", "optimize_marginals", "plan_marginals", "hierarchical_strategy", "optimize_p_identity", "plan_optimized", "plan_optimized_cdf", "plan_strategy", "prefix_strategy", "strategy_error", "strategy_sensitivity"]
