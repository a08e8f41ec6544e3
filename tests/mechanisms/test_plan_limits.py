"""Plans are bounded by the domain: no plan allocates memory proportional to |T| or searches over |T|.

Every ``plan_*`` of ``blowfish_privacy.mechanisms.__all__`` and every
baseline of the experiments is called with |T| = 2**40 and |T| = 2**62 in
a fresh process whose address space is limited (``RLIMIT_AS``) and whose
allocations are traced (``tracemalloc``): each must return a plan or refuse
with a documented exception, without a MemoryError and with a small traced
peak.  A per-call alarm only guards against a hang (it is not a timing
test).  The closed forms and capped searches that make this possible are
checked against the searches they replace.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from fractions import Fraction

import numpy as np
import plan_cases
import pytest

from blowfish_privacy import registry

from blowfish_privacy import Domain, Ordinal, Policy, mechanisms as M, secrets
from blowfish_privacy import baselines
from blowfish_privacy._validation import MEMORY_CAP, check_memory
from blowfish_privacy.errors import ParameterError
from blowfish_privacy.mechanisms._trees import best_branching, smallest_base, tree_height

greedyh_mod = importlib.import_module("blowfish_privacy.baselines.greedyh")
dawa_mod = importlib.import_module("blowfish_privacy.mechanisms.data_dependent.dawa")
mwem_mod = importlib.import_module("blowfish_privacy.baselines.mwem")
kmeans_grid_mod = importlib.import_module("blowfish_privacy.mechanisms.clustering.kmeans_grid")

# One or more calls per registered plan on |T| = N values (2-D plans: a k x k domain, k = sqrt(N)): the
# ``limits`` of each entry of tests/plan_cases.py.  The child process below runs them from this source, which
# loads that file by its path and names its ``limit_cases`` ``cases``.
CASES = textwrap.dedent(f"""
    import importlib.util, sys
    spec = importlib.util.spec_from_file_location("plan_cases_by_path", {plan_cases.__file__!r})
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass reads its module's namespace while it is built
    spec.loader.exec_module(module)
    cases = module.limit_cases
""")

RUNNER = r"""
import json, os, resource, signal, sys, time, tracemalloc
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import numpy as np
from blowfish_privacy.errors import BlowfishError
exec(open(sys.argv[2]).read())
from blowfish_privacy.experiments._dpbench_algorithms import ALGORITHMS

class Hang(Exception):
    pass

def alarm(*_):
    raise Hang()

signal.signal(signal.SIGALRM, alarm)
CLEAR = (ValueError, TypeError, OverflowError, NotImplementedError, BlowfishError)

def run(label, fn):
    tracemalloc.start()
    start = time.perf_counter()
    signal.alarm(int(sys.argv[3]))
    try:
        fn()
        out = {"outcome": "plan"}
    except Hang:
        out = {"outcome": "hang"}
    except CLEAR as exc:
        out = {"outcome": "refused", "type": type(exc).__name__, "message": str(exc)[:300]}
    except BaseException as exc:
        out = {"outcome": "error", "type": type(exc).__name__, "message": str(exc)[:300]}
    finally:
        signal.alarm(0)
    out["seconds"] = time.perf_counter() - start  # reported, not asserted
    out["peak"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out["label"] = label
    print(json.dumps(out), flush=True)

for N in (2**40, 2**62):
    for name, fns in cases(N).items():
        for i, fn in enumerate(fns):
            run(f"{name}[{i}] |T|={N}", fn)
    for (dims, name), alg in ALGORITHMS.items():
        k = N if dims == 1 else int(round(N ** 0.5))
        run(f"experiments {dims}-D {name} |T|={N}", lambda alg=alg, k=k: alg.plan(k, 1.0))
"""


def _plan_names():
    return sorted(registry.plans())


def test_every_public_plan_has_a_case():
    missing, unknown = plan_cases.uncovered(registry.plans())
    assert not missing, f"registered plans with no entry in tests/plan_cases.py: {missing}"
    assert not unknown, f"entries in tests/plan_cases.py for plans that are not registered: {unknown}"
    ns: dict = {}
    exec(CASES, ns)  # the child's source, which loads the table by its path
    calls = ns["cases"](16)
    assert sorted(calls) == _plan_names()
    assert not [name for name, fns in calls.items() if not fns], "a plan with no call on a huge domain"


@pytest.fixture(scope="module")
def huge_domain_outcomes(tmp_path_factory):
    path = tmp_path_factory.mktemp("plans") / "cases.py"
    path.write_text(CASES)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(3 * 2**30), str(path), "20"], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.mark.slow  # ~7 s: every plan of a 2**40 and 2**62 domain in a memory-limited child
def test_plans_of_huge_domains_return_or_refuse_without_allocating(huge_domain_outcomes):
    # |T| = 2**40 and 2**62 under a 3 GiB address space: a plan either
    # returns (no array over the domain is built) or refuses clearly; the
    # traced peak stays far below anything proportional to |T|
    labels = {o["label"].split("[")[0].split(" ")[0] for o in huge_domain_outcomes}
    assert set(_plan_names()) <= labels
    assert any(o["label"].startswith("experiments") for o in huge_domain_outcomes)
    bad = [o for o in huge_domain_outcomes if o["outcome"] not in ("plan", "refused") or o["peak"] > 64 * 2**20]
    assert not bad, bad


@pytest.mark.slow  # shares the memory-limited child above
def test_huge_domains_are_refused_naming_the_domain_size(huge_domain_outcomes):
    memory = [o for o in huge_domain_outcomes if o["outcome"] == "refused" and "working memory" in o["message"]]
    assert len(memory) > 20
    for o in memory:
        assert o["type"] == "ParameterError"
        assert "values" in o["message"] and "GiB" in o["message"]
        assert o["message"].split(":")[0] in ("size", "shape", "policy"), o


@pytest.mark.slow
def test_accepted_plans_allocate_nothing_proportional_to_the_domain():
    # |T| = 2**22 fits in memory: the plans are built, and their traced peak
    # stays far below one word per value (trees, edge lists, positions and
    # workloads are built by the measurement)
    import tracemalloc

    import scipy.optimize  # noqa: F401  (modules a plan imports on first use are not its memory)
    import scipy.sparse  # noqa: F401

    N = 2**22
    for name, fns in plan_cases.limit_cases(N).items():
        for i, fn in enumerate(fns):
            tracemalloc.start()
            try:
                fn()
            except (ValueError, TypeError, NotImplementedError):
                pass
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert peak < N, (name, i, peak)


# -- the memory check ---------------------------------------------------------------------------------------------


def test_check_memory_names_the_parameter_the_domain_and_the_limit(monkeypatch):
    import blowfish_privacy._validation as V

    monkeypatch.setattr(V, "available_memory", lambda: 2**30)
    assert check_memory(2**29, size=10) == 2**29
    with pytest.raises(ParameterError, match=r"policy: ordered on a domain of 1,000 values needs about 2 GiB") as e:
        check_memory(2**31, size=1000, parameter="policy", mechanism="ordered")
    assert e.value.parameter == "policy" and "1 GiB available" in str(e.value)
    monkeypatch.setattr(V, "available_memory", lambda: None)  # unknown: the documented cap
    check_memory(MEMORY_CAP, size=1)
    with pytest.raises(ParameterError, match="cap"):
        check_memory(MEMORY_CAP + 1, size=1)


def test_a_plan_larger_than_the_memory_available_is_refused(monkeypatch):
    import blowfish_privacy._validation as V

    pol = Policy(Domain([Ordinal("v", 0, 9999)]), secrets.Line())
    M.plan_ordered(pol, 1.0)
    monkeypatch.setattr(V, "available_memory", lambda: 10_000)
    for make in (lambda: M.plan_ordered(pol, 1.0), lambda: M.plan_identity(10_000, 1.0),
                 lambda: baselines.plan_hb(10_000, 1.0), lambda: baselines.plan_uniform((100, 100), 1.0),
                 lambda: M.plan_transformed_laplace(pol, 1.0)):
        with pytest.raises(ParameterError, match="10,000 values"):
            make()


# -- closed forms and capped searches --------------------------------------------------------------------------------


def _brute_branching(size, cost):
    if size <= 2:
        return 2
    best, best_v = 2, None
    for b in range(2, size + 1):
        v = cost(b, tree_height(size, b))
        if best_v is None or v < best_v:
            best, best_v = b, v
    return best


def _hb_cost(b, h):
    return 3 * (b - 1) * h ** 3 - 2 * (b + 1) * h ** 2


def _hb2d_cost(b, h):
    return ((h + 1) ** 2 - 1) ** 2 * max(3, 3 * (b - 1) * h - 2 * (b + 1)) ** 2


@pytest.mark.slow
def test_branching_rules_equal_the_search_over_every_b():
    for size in list(range(1, 300)) + [1000, 4095, 4096, 4097, 10**4 + 7, 65536]:
        assert baselines.hb_branching(size) == _brute_branching(size, _hb_cost), size
        assert baselines.hb2d_branching(size) == _brute_branching(size, _hb2d_cost), size


def test_branching_rules_of_huge_sizes():
    # the old search tried every b in 2..size
    for size in (2**40, 2**62, 2**63 - 1, 3**39):
        b = baselines.hb_branching(size)
        assert 2 <= b and b ** tree_height(size, b) >= size
        assert baselines.hb2d_branching(size) >= 2
    for n in range(1, 2000):
        for h in range(1, 12):
            b = smallest_base(n, h)
            assert b >= 2 and b**h >= n and (b == 2 or (b - 1) ** h < n)
    assert best_branching(2**62, _hb_cost) == baselines.hb_branching(2**62)


def test_dyadic_range_count_equals_the_listed_ranges():
    for n in list(range(1, 600)) + [1023, 1024, 1025, 4097]:
        assert mwem_mod.dyadic_range_count(n) == mwem_mod.dyadic_ranges(n).shape[0]
    assert mwem_mod.dyadic_range_count(2**62) > 2**62
    plan = baselines.plan_mwem(37, 1.0)
    assert plan.options["queries"] == mwem_mod.dyadic_ranges(37).shape[0] == plan.parts[0].count


def _array_node_variances(shares, m, eps):
    h = len(shares)
    out = [np.zeros(1)]
    for level, v_level in enumerate(dawa_mod.level_variances(shares, eps)[1:], start=1):
        v = np.full(1 << level, v_level)
        v[(np.arange(1 << level) << (h - level)) >= m] = 0.0
        out.append(v)
    return out


def _array_all_range_error(shares, m, eps):
    """The O(m) computation the closed form replaced: every node, every level."""
    from blowfish_privacy import _tree

    h = len(shares)
    var = _array_node_variances(shares, m, eps)
    sub = [None] * (h + 1)
    sub[h] = var[h].copy()
    for level in range(h - 1, -1, -1):
        v = var[level].copy()
        _tree.wls_up_level(np.zeros(sub[level + 1].size), sub[level + 1], np.zeros(v.size), v, 2)
        sub[level] = v

    def holding(level):
        w = 1 << (h - level)
        a = np.arange(1 << level, dtype=np.float64) * w
        b = a + w
        return np.where(b <= m, (a + 1) * (m - b + 1), 0.0)

    total, parent = 0.0, holding(0)
    for level in range(1, h + 1):
        cur = holding(level)
        count = cur - np.repeat(parent, 2)
        used = count > 0
        if np.any(np.isinf(sub[level][used])):
            return float("inf")
        total += float(np.dot(count[used], sub[level][used]))
        parent = cur
    return total


def _array_workload_error(shares, m, queries, eps):
    h = len(shares)
    sub = dawa_mod._subtree_variances(_array_node_variances(shares, m, eps))
    total = 0.0
    for lo, hi, parts in queries:
        for j, frac in parts:
            total += frac * frac * sub[h][j]
        if lo <= hi:
            for level, idx in dawa_mod._canonical_nodes(lo, hi, h):
                total += sub[level][idx]
        if total == np.inf:
            return np.inf
    return float(total)


@pytest.mark.slow
def test_greedy_criteria_in_closed_form_equal_the_node_by_node_sums():
    rng = np.random.default_rng(5)
    choices = dawa_mod.GREEDY_CHOICES
    for m in range(1, 70):
        h = max(1, tree_height(m, 2))
        for _ in range(4):
            w = [choices[i] for i in rng.integers(0, len(choices), size=h)]
            if sum(w) == 0:
                w[-1] = Fraction(1)
            shares = [x / sum(w) for x in w]
            eps = [Fraction(1), Fraction(1, 3), Fraction(5)][int(rng.integers(0, 3))]
            want = _array_all_range_error(shares, m, eps)
            assert greedyh_mod.all_range_error(shares, m, eps) == pytest.approx(want, rel=1e-12, abs=0)
            queries = [(int(a), int(b), []) for a, b in
                       (sorted(rng.integers(0, m, size=2)) for _ in range(5))] + [(1, 0, [(0, 0.5), (m - 1, 0.25)])]
            assert dawa_mod.workload_error(shares, m, queries, eps) == _array_workload_error(shares, m, queries, eps)


@pytest.mark.slow
def test_greedyh_shares_of_a_huge_domain_need_no_array_over_it():
    import tracemalloc

    tracemalloc.start()
    shares = greedyh_mod.all_range_shares(2**40 - 3, Fraction(1))  # the up-pass criterion, O(m) before
    assert len(shares) == 40 and sum(shares) == 1
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2**20


def test_choose_cell_compares_a_bounded_number_of_sides():
    cands = kmeans_grid_mod._cell_candidates(2**62)
    assert len(cands) <= kmeans_grid_mod.CELL_CANDIDATES + 1 and cands[-1] == 2**62
    assert cands == sorted(set(cands))
    assert kmeans_grid_mod._cell_candidates(500) == list(range(1, 501))
    pol = Policy(Domain([Ordinal("x", 0, 2**31 - 1), Ordinal("y", 0, 2**31 - 1)]), secrets.FullDomain())
    assert 1 <= M.choose_cell(pol, 1.0, 10**6) <= 2**31


def test_axis_line_policy_refuses_a_huge_edge_list():
    from blowfish_privacy.mechanisms.grids import grid
    with pytest.raises(ParameterError, match="edges"):
        grid.axis_line_policy(2**20, 2**20)
    with pytest.raises(TypeError, match="rows"):
        grid.axis_line_policy(2.5, 3)
    assert len(grid.axis_line_policy(3, 4).secrets.edges) == 9


def test_mwem_rounds_are_capped():
    with pytest.raises(ValueError, match="rounds"):
        baselines.plan_mwem(8, 1.0, rounds=mwem_mod.MAX_ROUNDS + 1)
    assert baselines.plan_mwem(8, 1.0, rounds=3).options["rounds"] == 3


@pytest.mark.slow
def test_subprocess_runner_reports_a_hang_and_a_memory_error(tmp_path):
    # the harness itself: a plan that allocates |T| words fails it, one that loops is stopped by the guard
    path = tmp_path / "cases.py"
    path.write_text(textwrap.dedent("""
        import numpy as np
        def cases(N):
            return {"alloc": [lambda: np.zeros(N)], "loop": [lambda: sum(x for x in iter(int, 1))]}
    """))
    runner = RUNNER.split("for N in (2**40, 2**62):")[0] + textwrap.dedent("""
        for name, fns in cases(2**40).items():
            run(name, fns[0])
    """)
    proc = subprocess.run([sys.executable, "-c", runner, str(3 * 2**30), str(path), "1"], capture_output=True,
                          text=True, timeout=120)
    got = {o["label"]: o for o in (json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{"))}
    assert got["alloc"]["outcome"] == "error" and got["alloc"]["type"] == "MemoryError"
    assert got["loop"]["outcome"] == "hang"


def test_closed_form_stretches_equal_the_trees():
    from blowfish_privacy.mechanisms.grids import grid
    from blowfish_privacy.policy.transform import spanning_tree

    transformed = importlib.import_module("blowfish_privacy.mechanisms.data_dependent.transformed")
    for rows in range(1, 10):
        for cols in range(1, 10):
            tree = grid.comb_tree(rows, cols)
            assert grid.comb_stretch(rows, cols, "dp") == (tree.diameter() if rows * cols > 1 else 0)
            lo, hi = grid.grid_edges(grid.grid_policy(rows, cols))
            want = int(tree.distances(lo, hi).max()) if lo.size else 0
            assert grid.comb_stretch(rows, cols, "grid") == want, (rows, cols)
    for n in range(2, 30):
        for g in (secrets.Line(), secrets.DistanceThreshold(3), secrets.FullDomain()):
            pol = Policy(Domain([Ordinal("v", 0, n - 1)]), g)
            assert transformed._library_stretch(pol) == spanning_tree(pol).stretch


@pytest.mark.slow
def test_closed_form_grid_sensitivities_equal_the_edge_scans():
    from blowfish_privacy.mechanisms.grids import grid
    gp = importlib.import_module("blowfish_privacy.mechanisms.grids._policies")
    for rows, cols in [(r, c) for r in range(1, 10) for c in range(1, 10)] + [(17, 5), (32, 33), (1, 40)]:
        policies = {"grid": grid.grid_policy(rows, cols), "king": grid.grid_policy(rows, cols, metric="linf"),
                    "rowline": grid.axis_line_policy(rows, cols)}
        for kind, pol in policies.items():
            for f in (2, 3, 4, 16):
                for levels in ("tensor", "quadtree"):
                    hr, hc = tree_height(rows, f), tree_height(cols, f)
                    if levels == "quadtree":
                        hr = hc = max(hr, hc)
                    pairs = grid._pairs(levels, hr, hc)
                    assert (gp.hier_sensitivity(pol, kind, (rows, cols), f, hr, hc, pairs)[0]
                            == gp._hier_sensitivity_scan(pol, kind, (rows, cols), f, hr, hc, pairs)[0])
                h = tree_height(rows, f)
                assert (gp.axis_sensitivity(pol, kind, (rows, cols), f, h)[0]
                        == gp._axis_sensitivity_scan(pol, kind, (rows, cols), f, h)[0])


@pytest.mark.slow
def test_oh_usage_sums_in_closed_form_equal_the_node_by_node_sums():
    oh = importlib.import_module("blowfish_privacy.mechanisms.cumulative._oh")
    for N in range(1, 90):
        for block in sorted({1, 2, 3, 8, N // 2 or 1, N - 1 or 1, N}):
            for f in (2, 3, 16, 1000):
                fo = oh.Forest(N, block, f)
                for level in range(1, fo.h + 1):
                    want = 0
                    for length in [block] * (fo.k - 1) + [fo.last]:
                        a = fo.usage(level, length).astype(object)
                        want += sum(int(x) * (N + 1 - int(x)) for x in a)
                    assert fo.usage_sum(level) == float(want), (N, block, f, level)
