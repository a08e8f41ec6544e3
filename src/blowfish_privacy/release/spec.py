"""TOML release specs: parsing and validation, once, before anything is spent.

A spec names one dataset (a CSV or Parquet path, or a bundled dataset), its
domain, one or more policies, a total budget and a list of releases.  Every
error is a :class:`SpecError` whose message names the file, the key, the
value and what is allowed.  See ``docs/spec.md`` for the reference.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import stat
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..accountant import composed_cost
from ..policy.domain import Categorical, Domain, Ordinal
from ..errors import SpecError, UnsupportedPolicyError
from ..policy._policy import Policy
from ..policy import secrets as _secrets
from .kinds import DP_BASELINES, KINDS, UNAVAILABLE_KINDS, OptionError, privacy_model
from .ledger import Protection

__all__ = ["SpecError", "Spec", "ReleaseSpec", "load_spec", "parse_spec", "BUNDLED"]

#: Bundled datasets usable as ``bundled = NAME``.
BUNDLED = {"adult": "adult.csv.gz"}

_TOP_KEYS = {"dataset", "domain", "policies", "release", "run"}
_DATASET_KEYS = {"id", "path", "bundled", "format", "columns", "total_epsilon", "invalid", "protect",
                 "allow_disclosures", "max_line_bytes"}
_INVALID = ("error", "clamp", "drop")  # what to do with a value outside the domain
#: ``protect = "dp"``: the dataset is protected under bounded differential privacy (every pair of values).
PROTECT_DP = "dp"
#: Epsilon of one release above which the spec must say ``large_epsilon = true``.
LARGE_EPSILON = 10
#: A release whose noise is 0 with a probability above this is no private release (``public = true``).
ZERO_NOISE_LIMIT = 0.99
#: Most releases one spec may list (each is planned, stored and written; more is refused at once).
MAX_RELEASES = 1000
#: Longest release name, in bytes of UTF-8 (file names are the name plus an extension).
MAX_NAME_BYTES = 200
#: Names a run writes itself (``summary.json``; the demo's ``spec.toml`` and ``demo-comparison.png``).
RESERVED_NAMES = ("summary", "spec", "demo-comparison")
#: Default longest line of a CSV input (``dataset.max_line_bytes``).
DEFAULT_MAX_LINE_BYTES = 1 << 20
_RUN_KEYS = {"seed", "vectors"}
#: How long vectors are written (``run.vectors``): ``NAME.csv`` or ``NAME.parquet``.
VECTOR_FORMATS = ("csv", "parquet")
_ORDINAL_KEYS = {"type", "low", "high", "bin_width", "column", "invalid"}
_CATEGORICAL_KEYS = {"type", "labels", "column", "invalid"}
_SECRETS = {
    "full_domain": {"secrets"},
    "attribute": {"secrets", "c"},
    "partition": {"secrets", "by", "intervals", "blocks"},
    "distance_threshold": {"secrets", "theta", "metric"},
    "line": {"secrets"},
    "intersection": {"secrets", "of"},
}
_POLICY_EXTRA = {"constraints", "attributes"}
_RELEASE_COMMON = {"name", "kind", "epsilon", "policy", "attributes", "where", "parallel", "public",
                   "large_epsilon"}


def _fail(where: str, key: str, message: str) -> SpecError:
    return SpecError(f"{where}: {key}: {message}")


def _tname(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "array", dict: "table"}.get(
        type(value), type(value).__name__
    )


@dataclass
class ReleaseSpec:
    """One validated ``[[release]]`` entry."""

    name: str
    kind: str
    epsilon: Fraction
    policy_name: str
    attributes: tuple[str, ...]
    domain: Domain
    policy: Policy
    options: dict
    key: str  # e.g. "release[0]"
    where: tuple = ()  # ((attribute name, value), ...): only the rows with these values
    parallel: str | None = None  # parallel group name (000 Thm 4.2)
    policy_note: str = ""  # how the spec's secret graph was adapted to binned attributes
    raw_secrets: object = None  # the spec's secret graph on raw values (before that adaptation)
    public: bool = False  # an exact release, marked as such: a disclosure, not a private release
    large_epsilon: bool = False  # epsilon above LARGE_EPSILON acknowledged


@dataclass
class Spec:
    """A validated release spec."""

    path: str
    dataset_id: str
    source: dict  # {"path": str, "format": "csv"|"parquet"} or {"bundled": name}
    total_epsilon: Fraction
    domain: Domain
    columns: dict  # attribute name -> column name in the table
    policies: dict
    releases: list[ReleaseSpec]
    seed: int | None
    text: str
    sha256: str = ""
    raw: dict = field(default_factory=dict)
    invalid: dict = field(default_factory=dict)  # attribute name -> "error" | "clamp" | "drop"
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES  # longest CSV line read
    protect: str = PROTECT_DP  # the name of the dataset's protection policy
    protection: Protection | None = None  # that policy, as the ledger keeps it
    allow_disclosures: bool | None = None  # as the spec says (None: not said)
    vectors_format: str = "csv"  # run.vectors: how vectors longer than the JSON's limit are written

    @property
    def disclosure_checks(self) -> list:
        """Attributes whose ``invalid = "error"`` makes the run an exact domain check (a disclosure)."""
        return sorted(a for a, mode in self.invalid.items() if mode == "error")

    @property
    def epsilon_requested(self) -> Fraction:
        """Sequential releases add up; each parallel group costs its largest epsilon."""
        return _requested(self.releases)


def _requested(releases) -> Fraction:
    return composed_cost((r.epsilon, r.parallel) for r in releases)


def read_spec_file(path: Path) -> str:
    """The text of the spec file at ``path`` (UTF-8); a :class:`SpecError` when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8-sig")  # a byte-order mark is not part of the TOML
    except FileNotFoundError:
        raise SpecError(f"{path}: the spec file does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the spec file ({exc})") from None


def load_spec(path) -> Spec:
    """Read and validate the spec file at ``path``."""
    p = Path(path)
    return parse_spec(read_spec_file(p), str(p), base_dir=p.parent)


def _epsilon(value: Any, where: str, key: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _fail(where, key, f"must be a number > 0 (e.g. 0.5 or \"1/10\"), got {value!r} ({_tname(value)})")
    try:
        # A float is read as its shortest decimal (0.1 is 1/10), a string exactly.
        frac = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    except (ValueError, ZeroDivisionError, OverflowError):
        raise _fail(where, key, f"must be a number > 0 (e.g. 0.5 or \"1/10\"), got {value!r}") from None
    if frac <= 0:
        raise _fail(where, key, f"must be a finite number > 0, got {value!r}")
    return frac


def _check_keys(table: dict, allowed: set, where: str, prefix: str) -> None:
    for k in table:
        if k not in allowed:
            raise _fail(where, f"{prefix}{k}", f"unknown key; allowed keys here: {sorted(allowed)}")


def _typed(table: dict, key: str, types, what: str, where: str, prefix: str, *, required=True, default=None):
    if key not in table:
        if required:
            raise _fail(where, f"{prefix}{key}", f"missing; must be {what}")
        return default
    value = table[key]
    types = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        raise _fail(where, f"{prefix}{key}", f"must be {what}, got {value!r} ({_tname(value)})")
    return value


def _str_list(table, key, where, prefix, *, required=True):
    value = _typed(table, key, list, "an array of strings", where, prefix, required=required)
    if value is None:
        return None
    for v in value:
        if not isinstance(v, str):
            raise _fail(where, f"{prefix}{key}", f"must be an array of strings, got element {v!r} ({_tname(v)})")
    return value


def parse_spec(text: str, path: str = "<spec>", *, base_dir: Path | None = None) -> Spec:
    """Validate spec ``text`` (the contents of ``path``) and return a :class:`Spec`."""
    where = path
    try:
        raw = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{where}: not valid TOML: {exc}") from None
    except RecursionError:
        raise SpecError(f"{where}: not a usable spec: its arrays or tables are nested too deeply") from None
    _check_keys(raw, _TOP_KEYS, where, "")

    # -- dataset --------------------------------------------------------------
    ds = _typed(raw, "dataset", dict, "a table [dataset]", where, "")
    _check_keys(ds, _DATASET_KEYS, where, "dataset.")
    dataset_id = _typed(ds, "id", str, "a non-empty string naming the dataset in the ledger", where, "dataset.")
    if not dataset_id.strip():
        raise _fail(where, "dataset.id", "must be a non-empty string, got ''")
    total = _epsilon(ds.get("total_epsilon"), where, "dataset.total_epsilon") if "total_epsilon" in ds else None
    if total is None:
        raise _fail(where, "dataset.total_epsilon", "missing; must be a number > 0 (the dataset's whole budget)")
    if ("path" in ds) == ("bundled" in ds):
        raise _fail(where, "dataset", "give exactly one of path (a CSV or Parquet file or folder) or "
                    f"bundled (one of {sorted(BUNDLED)})")
    if "bundled" in ds:
        name = _typed(ds, "bundled", str, f"one of {sorted(BUNDLED)}", where, "dataset.")
        if name not in BUNDLED:
            raise _fail(where, "dataset.bundled", f"unknown bundled dataset {name!r}; allowed: {sorted(BUNDLED)}")
        if "format" in ds:
            raise _fail(where, "dataset.format", "applies only with dataset.path")
        source = {"bundled": name}
    else:
        p = _typed(ds, "path", str, "a path to a CSV or Parquet file or folder", where, "dataset.")
        fpath = Path(p)
        if not fpath.is_absolute() and base_dir is not None:
            fpath = base_dir / fpath
        fmt = _typed(ds, "format", str, "\"csv\" or \"parquet\"", where, "dataset.", required=False)
        if fmt is None:
            low = fpath.name.lower()
            fmt = "parquet" if low.endswith((".parquet", ".pq")) or fpath.is_dir() else "csv"
        if fmt not in ("csv", "parquet"):
            raise _fail(where, "dataset.format", f"must be \"csv\" or \"parquet\", got {fmt!r}")
        if not fpath.exists():
            raise _fail(where, "dataset.path", f"{str(fpath)!r} does not exist")
        _check_regular(fpath, where)
        source = {"path": str(fpath), "format": fmt}
    max_line = _typed(ds, "max_line_bytes", int, "an integer >= 1024 (bytes)", where, "dataset.", required=False,
                      default=DEFAULT_MAX_LINE_BYTES)
    if max_line < 1024:
        raise _fail(where, "dataset.max_line_bytes", f"must be an integer >= 1024 (bytes), got {max_line}")
    columns_sel = _str_list(ds, "columns", where, "dataset.", required=False)
    invalid_default = _invalid_mode(ds, where, "dataset.", None)
    protect_name = _typed(ds, "protect", str, f"the name of a policy of [policies], or {PROTECT_DP!r}", where,
                          "dataset.", required=False)
    allow_disclosures = _typed(ds, "allow_disclosures", bool, "true or false", where, "dataset.", required=False)

    # -- domain ---------------------------------------------------------------
    dom = _typed(raw, "domain", dict, "a table of attributes [domain.NAME]", where, "")
    if not dom:
        raise _fail(where, "domain", "must define at least one attribute, e.g. [domain.age]")
    attrs = []
    columns = {}
    invalid = {}
    for name, a in dom.items():
        pre = f"domain.{name}."
        if not isinstance(a, dict):
            raise _fail(where, f"domain.{name}", f"must be a table with a type, got {a!r} ({_tname(a)})")
        typ = _typed(a, "type", str, "\"ordinal\" or \"categorical\"", where, pre)
        if typ == "ordinal":
            _check_keys(a, _ORDINAL_KEYS, where, pre)
            low = _typed(a, "low", int, "an integer", where, pre)
            high = _typed(a, "high", int, "an integer", where, pre)
            width = _typed(a, "bin_width", int, "an integer >= 1", where, pre, required=False, default=1)
            try:
                attrs.append(Ordinal(name, low, high, width))
            except (TypeError, ValueError) as exc:
                raise _fail(where, f"domain.{name}", str(exc)) from None
        elif typ == "categorical":
            _check_keys(a, _CATEGORICAL_KEYS, where, pre)
            labels = _typed(a, "labels", list, "a non-empty array of distinct labels", where, pre)
            try:
                attrs.append(Categorical(name, labels))
            except (TypeError, ValueError) as exc:
                raise _fail(where, f"domain.{name}.labels", str(exc)) from None
        else:
            raise _fail(where, f"{pre}type", f"must be \"ordinal\" or \"categorical\", got {typ!r}")
        col = _typed(a, "column", str, "a column name of the table", where, pre, required=False, default=name)
        if columns_sel is not None and col not in columns_sel:
            raise _fail(where, f"{pre}column", f"column {col!r} is not in dataset.columns {columns_sel}")
        columns[name] = col
        # data-independent by default: ordinal values are clamped into the domain, unknown labels dropped
        invalid[name] = _invalid_mode(a, where, pre, invalid_default or ("clamp" if typ == "ordinal" else "drop"))
    domain = Domain(attrs)

    # -- policies -------------------------------------------------------------
    pols = _typed(raw, "policies", dict, "a table of policies [policies.NAME]", where, "", required=False, default={})
    policy_defs = {}
    if PROTECT_DP in pols:
        raise _fail(where, f"policies.{PROTECT_DP}", f"the name {PROTECT_DP!r} is reserved (dataset.protect = "
                    f"{PROTECT_DP!r} means bounded differential privacy); choose another name")
    for pname, ptab in pols.items():
        pre = f"policies.{pname}."
        if not isinstance(ptab, dict):
            raise _fail(where, f"policies.{pname}", f"must be a table, got {ptab!r} ({_tname(ptab)})")
        kind = _typed(ptab, "secrets", str, f"one of {sorted(_SECRETS)}", where, pre)
        if kind not in _SECRETS:
            raise _fail(where, f"{pre}secrets", f"unknown secret graph {kind!r}; allowed: {sorted(_SECRETS)}")
        _check_keys(ptab, _SECRETS[kind] | _POLICY_EXTRA, where, pre)
        constraints = _typed(ptab, "constraints", list, "an array", where, pre, required=False, default=[])
        if constraints:
            raise _fail(where, f"{pre}constraints", "public constraints are not supported in this version; "
                        "allowed: [] (none)")
        if kind != "intersection":
            policy_defs[pname] = _secret_graph(kind, ptab, where, pre)
    for pname in pols:
        if pname not in policy_defs:
            policy_defs[pname] = _intersection(pname, pols, policy_defs, where, ())

    # -- releases -------------------------------------------------------------
    rels = _typed(raw, "release", list, "an array of tables [[release]]", where, "")
    if not rels:
        raise _fail(where, "release", "must list at least one [[release]]")
    if len(rels) > MAX_RELEASES:
        raise _fail(where, "release", f"lists {len(rels)} releases; a spec may list at most {MAX_RELEASES} (split it "
                    "into several specs on the same dataset id: they share one budget)")
    releases: list[ReleaseSpec] = []
    seen = set()
    for k, r in enumerate(rels):
        key = f"release[{k}]"
        if not isinstance(r, dict):
            raise _fail(where, key, f"must be a table, got {r!r}")
        pre = f"{key}."
        kind = _typed(r, "kind", str, f"one of {sorted(KINDS)}", where, pre)
        if kind in UNAVAILABLE_KINDS:
            raise _fail(where, f"{pre}kind", f"release kind {kind!r} is not available in this version; "
                        f"available: {sorted(KINDS)}")
        if kind not in KINDS:
            raise _fail(where, f"{pre}kind", f"unknown release kind {kind!r}; allowed: {sorted(KINDS)}")
        handler = KINDS[kind]
        _check_keys(r, _RELEASE_COMMON | set(handler.options), where, pre)
        name = _typed(r, "name", str, "a unique non-empty string (used for file names)", where, pre)
        _check_name(name, where, f"{pre}name")
        public = _typed(r, "public", bool, "true or false", where, pre, required=False, default=False)
        large = _typed(r, "large_epsilon", bool, "true or false", where, pre, required=False, default=False)
        if name.casefold() in seen:  # file systems that ignore case would write one file for both
            raise _fail(where, f"{pre}name", f"{name!r} is used by an earlier release (names must be unique, "
                        "ignoring case)")
        seen.add(name.casefold())
        if "epsilon" not in r:
            raise _fail(where, f"{pre}epsilon", "missing; must be a number > 0")
        eps = _epsilon(r["epsilon"], where, f"{pre}epsilon")
        if eps > LARGE_EPSILON and not large:
            raise _fail(where, f"{pre}epsilon", f"{_show(eps)} is above {LARGE_EPSILON}, where a release protects "
                        "next to nothing (odds may move by e^epsilon); set large_epsilon = true in this release "
                        "to mean it")
        if not handler.uses_policy:
            if "policy" in r:
                raise _fail(where, f"{pre}policy", f"release kind {kind!r} does not take a policy (it has its own "
                            "discriminative pairs); remove the key")
            pol_name = ""
        elif "policy" not in r and r.get("mechanism") in DP_BASELINES:
            pol_name = ""  # a DP baseline: its guarantee is plain bounded DP (the complete secret graph)
        else:
            pol_name = _typed(r, "policy", str, f"one of the policies {sorted(policy_defs)}", where, pre)
        if pol_name and pol_name not in policy_defs:
            raise _fail(where, f"{pre}policy", f"unknown policy {pol_name!r}; defined: {sorted(policy_defs)}")
        attributes = _str_list(r, "attributes", where, pre)
        if not attributes:
            raise _fail(where, f"{pre}attributes", f"must list at least one attribute of {list(domain.names)}")
        for a in attributes:
            if a not in domain.names:
                raise _fail(where, f"{pre}attributes", f"unknown attribute {a!r}; the domain has {list(domain.names)}")
        if len(set(attributes)) != len(attributes):
            raise _fail(where, f"{pre}attributes", f"attributes must be distinct, got {attributes}")
        sub = Domain([domain.attribute(a) for a in attributes])
        try:
            graph, policy_note = (_raw_value_graph(policy_defs[pol_name], sub, where, f"policies.{pol_name}")
                                  if pol_name else (_secrets.FullDomain(), ""))
            policy = Policy(sub, graph)
        except (TypeError, ValueError, UnsupportedPolicyError) as exc:
            if isinstance(exc, SpecError):
                raise
            raise _fail(where, f"{pre}policy", f"policy {pol_name!r} does not fit attributes {attributes}: {exc}") from None
        options = {o: r[o] for o in handler.options if o in r}
        try:
            options = handler.validate(options, sub, policy)
        except OptionError as exc:
            raise _fail(where, f"{pre}{exc.key}", exc.message) from None
        where_items = ()
        if "where" in r:
            wtab = r["where"]
            if not isinstance(wtab, dict) or not wtab:
                raise _fail(where, f"{pre}where", f"must be a table of attribute = value, e.g. {{ sex = \"f\" }}, got {wtab!r}")
            for wname, wvalue in wtab.items():
                if isinstance(wvalue, (list, dict)):
                    raise _fail(where, f"{pre}where.{wname}", f"must be one value of the attribute, got "
                                f"{_tname(wvalue)}; intervals are not supported in where (use attributes and "
                                "ranges of a cdf release, or one release per value)")
                if wname not in domain.names:
                    raise _fail(where, f"{pre}where.{wname}", f"unknown attribute; the domain has {list(domain.names)}")
                if wname not in attributes:
                    # the release's policy must cover the selecting attribute, or a change of it
                    # (secret or not) would move rows in and out of the release unaccounted for
                    raise _fail(where, f"{pre}where.{wname}", f"must be one of the release's attributes {attributes}; "
                                "add it to attributes")
                try:
                    domain.attribute(wname).codes_of([wvalue])
                except (TypeError, ValueError) as exc:
                    raise _fail(where, f"{pre}where.{wname}", str(exc).removeprefix("records: ")) from None
            where_items = tuple(sorted(wtab.items()))
        group = _typed(r, "parallel", str, "a parallel group name (a string)", where, pre, required=False)
        releases.append(ReleaseSpec(name, kind, eps, pol_name, tuple(attributes), sub, policy, options, key,
                                    where_items, group, policy_note,
                                    policy_defs[pol_name] if pol_name else None, public, large))
    _check_parallel_groups(releases, where)
    requested = _requested(releases)
    if requested > total:
        raise _fail(where, "release", f"the releases ask for epsilon {_show(requested)} in total, more than "
                    f"dataset.total_epsilon = {_show(total)}")

    run = _typed(raw, "run", dict, "a table [run]", where, "", required=False, default={})
    _check_keys(run, _RUN_KEYS, where, "run.")
    seed = _typed(run, "seed", int, "an integer >= 0 (seeded noise: for tests only, not secure)", where, "run.",
                  required=False)
    if seed is not None and seed < 0:
        raise _fail(where, "run.seed", f"must be an integer >= 0, got {seed}")
    vectors_format = _typed(run, "vectors", str, '"csv" or "parquet"', where, "run.", required=False, default="csv")
    if vectors_format not in VECTOR_FORMATS:
        raise _fail(where, "run.vectors", f'must be "csv" or "parquet", got {vectors_format!r:.60}')
    if vectors_format == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise _fail(where, "run.vectors", '"parquet" needs pyarrow, which is not installed '
                    "(pip install 'blowfish-privacy[parquet]'), or use \"csv\"")
    protect_name = _protect_name(protect_name, releases, policy_defs, where)
    raw_domain = _raw_domain(domain)
    members = protect_members(protect_name, pols, policy_defs, releases, raw_domain, where)
    protection = _protection(protect_name, members, raw_domain, columns)
    for rel in releases:
        _admit(rel, protect_name, members, raw_domain, where)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Spec(path, dataset_id, source, total, domain, columns, policy_defs, releases, seed, text, digest, raw,
                invalid, max_line, protect_name, protection, allow_disclosures, vectors_format)


def valid_release_name(name) -> bool:
    """Whether ``name`` may name a release (and its files): see :func:`_check_name`."""
    try:
        _check_name(name, "", "")
    except SpecError:
        return False
    return isinstance(name, str)


def _check_name(name: str, where: str, key: str) -> None:
    """A release name is a file name on every system: printable, no separators, short, not reserved."""
    allowed = (f"a non-empty string of printable characters without / \\ : or a leading dot, at most "
               f"{MAX_NAME_BYTES} bytes in UTF-8, not one of {list(RESERVED_NAMES)}")
    bad = (not name or name.startswith(".") or any(c in name for c in "/\\:") or not name.isprintable()
           or name != name.strip())
    if bad:
        raise _fail(where, key, f"must be {allowed}, got {name!r}")
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise _fail(where, key, f"must be {allowed}, got a name of {len(name.encode('utf-8', 'surrogatepass'))} "
                    "bytes")
    if name.casefold() in RESERVED_NAMES:
        raise _fail(where, key, f"{name!r} is a file the run writes itself; must be {allowed}")


def _check_regular(path: Path, where: str) -> None:
    """Refuse special files (FIFOs, devices, sockets) before anything opens them: reading one may block."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise _fail(where, "dataset.path", f"{str(path)!r} cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        return
    raise _fail(where, "dataset.path", f"{str(path)!r} is not a regular file or folder (a pipe, device or socket "
                "is refused: reading one may never end)")


def _intersection(pname: str, pols: dict, done: dict, where: str, stack: tuple):
    """The graph of ``secrets = "intersection"`` policy ``pname``: the pairs every policy of ``of`` protects."""
    pre = f"policies.{pname}."
    if pname in stack:
        raise _fail(where, f"{pre}of", f"policies {list(stack)} name each other in a circle")
    if pname in done:
        return done[pname]
    members = _str_list(pols[pname], "of", where, pre)
    if len(members) < 2:
        raise _fail(where, f"{pre}of", f"must name at least two policies of [policies], got {members}")
    graphs = []
    for m in members:
        if m not in pols:
            raise _fail(where, f"{pre}of", f"unknown policy {m!r}; defined: {sorted(pols)}")
        graphs.append(done[m] if m in done else _intersection(m, pols, done, where, stack + (pname,)))
    done[pname] = _secrets.Intersection(sorted(graphs, key=repr))
    return done[pname]


def _protect_name(given, releases, policy_defs, where: str) -> str:
    """``dataset.protect``, or the one policy every release (besides DP baselines) uses."""
    if given is not None:
        if given != PROTECT_DP and given not in policy_defs:
            raise _fail(where, "dataset.protect", f"unknown policy {given!r}; allowed: {PROTECT_DP!r} (bounded "
                        f"differential privacy) or one of the policies {sorted(policy_defs)}")
        return given
    used = {}
    for rel in releases:
        if rel.policy_name and privacy_model(rel.kind, rel.options) == "Blowfish":
            used.setdefault(repr(policy_defs[rel.policy_name]), rel.policy_name)
    if len(used) > 1:
        raise _fail(where, "dataset.protect", f"missing, and the releases use several policies "
                    f"{sorted(used.values())}: name the one the dataset is protected under (every release's "
                    "policy must protect each of its pairs), e.g. a policy with secrets = \"intersection\" and "
                    f"of = {sorted(used.values())}, or {PROTECT_DP!r}")
    if used:
        return next(iter(used.values()))
    return PROTECT_DP


def _raw_domain(domain: Domain) -> Domain:
    """The domain on raw values (bins of width 1): where the spec's policies speak."""
    return Domain([Ordinal(a.name, a.low, a.high) if isinstance(a, Ordinal) else a for a in domain.attributes])


def _member_names(name: str, pols: dict, seen: tuple = ()) -> list:
    """The policies an intersection policy is made of, nested intersections flattened."""
    if pols[name].get("secrets") != "intersection":
        return [name]
    out = []
    for m in pols[name]["of"]:
        out += [x for x in _member_names(m, pols, seen + (name,)) if x not in out]
    return out


def protect_members(protect_name: str, pols: dict, policy_defs: dict, releases, raw_domain: Domain,
                     where: str) -> list:
    """The dataset's protection policy as ``[(policy name, raw secret graph, attributes it speaks of)]``.

    The dataset protects the pairs of full-domain values that every member
    protects, a member ``(G, A)`` protecting the pairs whose values on the
    attributes ``A`` are equal or an edge of ``G`` (a statistic of ``A``
    does not see the other attributes).  A member speaks of the attributes
    its policy table names (``attributes = [...]``), else of the attributes
    of the releases that use it, which must then agree.
    """
    if protect_name == PROTECT_DP:
        return [(PROTECT_DP, _secrets.FullDomain(), tuple(raw_domain.names))]
    out = []
    for m in _member_names(protect_name, pols):
        key = f"policies.{m}.attributes"
        if "attributes" in pols[m]:
            attrs = _str_list(pols[m], "attributes", where, f"policies.{m}.")
            unknown = [a for a in attrs if a not in raw_domain.names]
            if not attrs or unknown or len(set(attrs)) != len(attrs):
                raise _fail(where, key, f"must list distinct attributes of the domain {list(raw_domain.names)}, "
                            f"got {attrs}")
        else:
            used = {tuple(r.attributes) for r in releases
                    if r.policy_name == m and privacy_model(r.kind, r.options) == "Blowfish"}
            if len(used) != 1:
                why = ("no release uses it" if not used else
                       f"its releases use it on different attributes {sorted(list(u) for u in used)}")
                raise _fail(where, key, f"missing: policy {m!r} is part of the dataset's protection "
                            f"(dataset.protect = {protect_name!r}) and {why}; say which attributes it protects, "
                            f"e.g. attributes = {list(raw_domain.names)[:2]}")
            attrs = list(next(iter(used)))
        attrs = tuple(a for a in raw_domain.names if a in attrs)  # domain order
        graph = policy_defs[m]
        sub = Domain([raw_domain.attribute(a) for a in attrs])
        try:
            graph.validate(sub)
        except (TypeError, ValueError, UnsupportedPolicyError) as exc:
            raise _fail(where, "dataset.protect", f"policy {m!r} does not fit attributes {list(attrs)}: {exc}") \
                from None
        out.append((m, graph, attrs))
    return out


def _protection(name: str, members: list, raw_domain: Domain, columns: dict) -> Protection:
    # the graphs and the attributes they speak of, not the domain's ranges: a later spec may narrow or widen
    # a range (out-of-range values are clamped or dropped) under the same protection
    # ... and the column each attribute is read from: an attribute mapped to another column is other data
    attrs = [{"name": a.name, "type": "ordinal" if isinstance(a, Ordinal) else "categorical",
              "column": columns[a.name]} for a in raw_domain.attributes]
    parts = sorted(({"graph": repr(g), "attributes": list(a)} for _, g, a in members), key=json.dumps)
    key = json.dumps({"members": parts, "domain": attrs}, sort_keys=True)
    if name == PROTECT_DP:
        label = "dp (bounded differential privacy: every pair of values)"
    else:
        label = f"{name} (" + " and ".join(f"{m}: {g!r} on {list(a)}" for m, g, a in members) + ")"
    return Protection(key, f"{label}, domain {list(raw_domain.names)}")


def release_graph(rel):
    """The secret graph on raw values of the release's attributes whose pairs the release protects."""
    model = privacy_model(rel.kind, rel.options)
    if model == "DP":  # a DP baseline protects every pair of values of its attributes
        return _secrets.FullDomain()
    if model == "Blowfish":
        return rel.raw_secrets
    # Pufferfish sums (003 Sec 7.1): the noise is calibrated to any change of one value by less than 4k
    # (plan_pufferfish_sum), so every pair of integers closer than 4k is protected (absolute error k);
    # with relative error r and values >= low > 0, |x - y| <= low * r keeps max/min <= 1 + r, well
    # inside the factor (1 + r)^4 the noise covers
    attr = rel.domain.attributes[0]
    if "absolute_error" in rel.options:
        theta = math.ceil(4 * Fraction(repr(rel.options["absolute_error"]))) - 1
    else:
        theta = math.floor(Fraction(attr.low) * Fraction(repr(rel.options["relative_error"])))
    return _secrets.DistanceThreshold(max(0, theta))


def _member_witness(member, rel_graph, rel_attrs: tuple, raw_domain: Domain):
    """A pair of full-domain values the member protects and the release does not, None when it protects
    all of them; raises UnsupportedPolicyError when that cannot be decided."""
    _, graph, attrs = member
    rsub = Domain([raw_domain.attribute(a) for a in rel_attrs])
    if set(rel_attrs) <= set(attrs):
        msub = Domain([raw_domain.attribute(a) for a in attrs])
        pair = _secrets.uncovered_pair(graph, msub, rel_graph, rsub)
        return None if pair is None else _extend(pair, attrs, raw_domain)
    # the member lets the attributes outside it change freely: the release must protect every pair of its
    # values that agree on the attributes it shares with the member
    shared = [a for a in rel_attrs if a in attrs]
    free = _secrets.Partition.by_attributes(shared) if shared else _secrets.FullDomain()
    pair = _secrets.uncovered_pair(free, rsub, rel_graph, rsub)
    if pair is not None:
        return _extend(pair, rel_attrs, raw_domain)
    if _secrets.uncovered_pair(_secrets.FullDomain(), rsub, rel_graph, rsub) is None:
        return None  # the release protects every pair of its values
    raise UnsupportedPolicyError(f"the release's attributes {list(rel_attrs)} reach beyond the attributes "
                                 f"{list(attrs)} its policy is compared with")


def _extend(pair, attrs: tuple, raw_domain: Domain):
    """Values on ``attrs`` extended to the whole domain (the same first value elsewhere in both)."""
    x, y = (tuple(v) if isinstance(v, (tuple, list)) else (v,) for v in pair)
    fill = {a.name: (a.low if isinstance(a, Ordinal) else a.labels[0]) for a in raw_domain.attributes}
    fx = {**fill, **dict(zip(attrs, x))}
    fy = {**fill, **dict(zip(attrs, y))}
    return tuple(fx[n] for n in raw_domain.names), tuple(fy[n] for n in raw_domain.names)


def _admit(rel, protect_name: str, members: list, raw_domain: Domain, where: str) -> None:
    """Refuse a release whose policy leaves a pair of the dataset's protection policy unprotected.

    The dataset's pairs are those every member protects, so the release is
    admitted when its policy protects every pair of one member.
    """
    graph = release_graph(rel)
    mine = f"policy {rel.policy_name!r}" if rel.policy_name else f"release kind {rel.kind!r}"
    witness, problems = None, []
    for member in members:
        try:
            pair = _member_witness(member, graph, tuple(rel.attributes), raw_domain)
        except UnsupportedPolicyError as exc:
            problems.append(f"{member[0]!r}: {exc}")
            continue
        if pair is None:
            return
        witness = witness or pair
    if witness is not None and len(members) == 1:
        x, y = witness
        raise _fail(where, f"{rel.key}.policy", f"{mine} does not protect every pair the dataset is protected "
                    f"under (dataset.protect = {protect_name!r}): the values {_pair_text(raw_domain, x)} and "
                    f"{_pair_text(raw_domain, y)} are a protected pair that this release would expose; use a "
                    "policy whose secret graph contains the dataset's (the same or a stronger one)")
    detail = "; ".join(problems) if problems else (
        f"e.g. {_pair_text(raw_domain, witness[0])} and {_pair_text(raw_domain, witness[1])} are protected by "
        f"{members[0][0]!r} but not by the release")
    raise _fail(where, f"{rel.key}.policy", f"cannot show that {mine} protects every pair the dataset is "
                f"protected under (dataset.protect = {protect_name!r}): no member of it is contained in the "
                f"release's secret graph ({detail}); use a policy whose secret graph contains the dataset's")


def _pair_text(domain: Domain, value) -> str:
    value = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    return "(" + ", ".join(f"{n} = {v!r}" for n, v in zip(domain.names, value)) + ")"


def _invalid_mode(table: dict, where: str, prefix: str, default: str | None = "error") -> str | None:
    mode = _typed(table, "invalid", str, f"one of {list(_INVALID)}", where, prefix, required=False, default=default)
    if mode is not None and mode not in _INVALID:
        raise _fail(where, f"{prefix}invalid", f"must be one of {list(_INVALID)} (what to do with a value outside "
                    f"the domain), got {mode!r}")
    return mode


def _raw_value_graph(graph, sub: Domain, where: str, key: str):
    """The secret graph on the release's bins that protects the spec's *raw* values.

    A spec's thresholds and interval boundaries speak of raw values, while
    a binned attribute's domain values are its bins (represented by their
    lower edges).  Two raw values within theta lie in bins whose lower
    edges differ by at most theta + bin_width - 1 per attribute, so a
    distance threshold is widened to cover every such pair (L1: + sum of
    (bin_width - 1), L-infinity: + max, L2: + the ceiling of the L2 norm);
    interval boundaries must be bin edges (a bin split between two blocks
    would have raw values of both).  Returns ``(graph, note)``.
    """
    widths = [a.bin_width if isinstance(a, Ordinal) else 1 for a in sub.attributes]
    extra = [w - 1 for w in widths]
    if not any(extra):
        return graph, ""
    if isinstance(graph, _secrets.DistanceThreshold) and not isinstance(graph, _secrets.Line):
        metric = graph.metric
        if metric == "l1":
            grow = sum(extra)
        elif metric == "linf":
            grow = max(extra)
        else:
            grow = math.isqrt(sum(e * e for e in extra))
            grow += grow * grow < sum(e * e for e in extra)  # ceiling of the norm
        theta = graph.theta
        wide = _secrets.DistanceThreshold(theta + grow, metric)
        return wide, (f"theta {theta} ({metric}) speaks of raw values; on the bins (lower edges, bin widths "
                      f"{widths}) it is widened to {theta + grow} so that every pair of raw values within {theta} "
                      "stays secret")
    if isinstance(graph, _secrets.Partition) and graph.mode == "intervals" and sub.ndim == 1:
        attr = sub.attributes[0]
        for b in graph.boundaries:
            if attr.low < b <= attr.high and (b - attr.low) % attr.bin_width:
                raise _fail(where, key, f"interval boundary {b} falls inside a bin of attribute {attr.name!r} "
                            f"(bins of width {attr.bin_width} from {attr.low}): that bin would hold raw values of "
                            f"two blocks; use boundaries at bin edges ({attr.low} + k * {attr.bin_width})")
    return graph, ""


def _check_parallel_groups(releases, where: str) -> None:
    """Parallel composition (000 Thm 4.2) only for provably disjoint groups with no secret edge between them.

    The releases of a group must select their rows with ``where`` on the
    same attributes, with pairwise different values (so no individual is
    in two of them), include those attributes in their own attributes, and
    use a policy that partitions by them (so no secret edge joins two
    groups: an individual's change affects one release only).
    """
    groups: dict[str, list] = {}
    for r in releases:
        if r.parallel is not None:
            groups.setdefault(r.parallel, []).append(r)
    for name, members in groups.items():
        first = members[0]
        if len(members) < 2:
            raise _fail(where, f"{first.key}.parallel", f"parallel group {name!r} has one release; a group needs "
                        "at least two releases on disjoint rows")
        keys = tuple(k for k, _ in first.where)
        for r in members:
            if privacy_model(r.kind, r.options) != "Blowfish":
                raise _fail(where, f"{r.key}.parallel", f"release kind {r.kind!r} with these options is a "
                            f"{privacy_model(r.kind, r.options)} release: under its guarantee one person can move "
                            "between the groups, so parallel composition does not hold; remove parallel")
            if not r.where:
                raise _fail(where, f"{r.key}.where", f"a release of parallel group {name!r} must select its rows "
                            "with where = { ATTRIBUTE = VALUE }")
            if tuple(k for k, _ in r.where) != keys:
                raise _fail(where, f"{r.key}.where", f"the releases of parallel group {name!r} must select rows on "
                            f"the same attributes {list(keys)}, got {[k for k, _ in r.where]}")
            g = r.policy.secrets
            if not (isinstance(g, _secrets.Partition) and g.mode == "attributes" and set(keys) <= set(g.names)):
                raise _fail(where, f"{r.key}.policy", f"parallel group {name!r} needs a policy with no secret edge "
                            f"between its groups, i.e. secrets = \"partition\" with by including {list(keys)}; "
                            f"policy {r.policy_name!r} is {g!r}")
        seen = {}
        for r in members:
            codes = tuple(int(r.domain.attribute(k).codes_of([v])[0]) for k, v in r.where)
            if codes in seen:
                raise _fail(where, f"{r.key}.where", f"selects the same rows as release {seen[codes]!r} of parallel "
                            f"group {name!r}; the groups must be disjoint")
            seen[codes] = r.name


def _show(f: Fraction) -> str:
    return f"{float(f):.6g}" if f.denominator != 1 else str(f.numerator)


def _secret_graph(kind: str, t: dict, where: str, pre: str):
    try:
        if kind == "full_domain":
            return _secrets.FullDomain()
        if kind == "line":
            return _secrets.Line()
        if kind == "attribute":
            c = _typed(t, "c", int, "an integer >= 1", where, pre, required=False, default=1)
            return _secrets.Attribute(c)
        if kind == "distance_threshold":
            theta = _typed(t, "theta", (int, float), "a number >= 0", where, pre)
            metric = _typed(t, "metric", str, "\"l1\", \"l2\" or \"linf\"", where, pre, required=False, default="l1")
            return _secrets.DistanceThreshold(theta, metric)
        # partition
        given = [k for k in ("by", "intervals", "blocks") if k in t]
        if len(given) != 1:
            raise _fail(where, f"{pre}secrets", "a partition needs exactly one of by (attribute names), "
                        "intervals (boundaries of a 1-D ordinal domain) or blocks (arrays of values)")
        if "by" in t:
            return _secrets.Partition.by_attributes(_str_list(t, "by", where, pre))
        if "intervals" in t:
            return _secrets.Partition.intervals(_typed(t, "intervals", list, "an array of numbers", where, pre))
        return _secrets.Partition(_typed(t, "blocks", list, "an array of arrays of values", where, pre))
    except (TypeError, ValueError) as exc:
        if isinstance(exc, SpecError):
            raise
        raise _fail(where, pre.rstrip("."), str(exc)) from None
