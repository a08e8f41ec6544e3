"""TOML release specs: parsing and validation, once, before anything is spent.

A spec names one dataset (a CSV or Parquet path, or a bundled dataset), its
domain, one or more policies, a total budget and a list of releases.  Every
error is a :class:`SpecError` whose message names the file, the key, the
value and what is allowed.  See ``docs/spec.md`` for the reference.

The reader is this module; the ``[policies]`` tables are read by
:mod:`._spec_policies` (secret graphs by name from
:mod:`blowfish_privacy.policy.secrets.registry`), the dataset's protection
policy and the rule that admits each release under it are
:mod:`._protection`, and the typed-key helpers :mod:`._spec_tables`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import stat
import tomllib
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..accountant import composed_cost
from ..policy.domain import Categorical, Domain, Ordinal
from ..errors import SpecError, UnsupportedPolicyError
from ..policy._policy import Policy
from ..policy.secrets import FullDomain
from . import _protection
from ._protection import PROTECT_DP
from ._spec_policies import check_parallel_groups, raw_value_graph, read_policies
from ._spec_tables import check_keys, fail, str_list, type_name, typed
from .kinds import KINDS, UNAVAILABLE_KINDS, OptionError
from .ledger import Protection

__all__ = ["SpecError", "Spec", "ReleaseSpec", "load_spec", "parse_spec", "BUNDLED"]

#: Bundled datasets usable as ``bundled = NAME``.
BUNDLED = {"adult": "adult.csv.gz"}

_TOP_KEYS = {"dataset", "domain", "policies", "release", "run"}
_DATASET_KEYS = {"id", "path", "bundled", "format", "columns", "total_epsilon", "invalid", "protect",
                 "allow_disclosures", "max_line_bytes"}
_INVALID = ("error", "clamp", "drop")  # what to do with a value outside the domain
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
_RELEASE_COMMON = {"name", "kind", "epsilon", "policy", "attributes", "where", "parallel", "public",
                   "large_epsilon"}


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


def load_spec(path: str | os.PathLike[str]) -> Spec:
    """Read and validate the spec file at ``path``."""
    p = Path(path)
    return parse_spec(read_spec_file(p), str(p), base_dir=p.parent)


def _epsilon(value: Any, where: str, key: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise fail(where, key, f"must be a number > 0 (e.g. 0.5 or \"1/10\"), got {value!r} ({type_name(value)})")
    try:
        # A float is read as its shortest decimal (0.1 is 1/10), a string exactly.
        frac = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    except (ValueError, ZeroDivisionError, OverflowError):
        raise fail(where, key, f"must be a number > 0 (e.g. 0.5 or \"1/10\"), got {value!r}") from None
    if frac <= 0:
        raise fail(where, key, f"must be a finite number > 0, got {value!r}")
    return frac


def parse_spec(text: str, path: str = "<spec>", *, base_dir: Path | None = None) -> Spec:
    """Validate spec ``text`` (the contents of ``path``) and return a :class:`Spec`."""
    where = path
    try:
        raw = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{where}: not valid TOML: {exc}") from None
    except RecursionError:
        raise SpecError(f"{where}: not a usable spec: its arrays or tables are nested too deeply") from None
    check_keys(raw, _TOP_KEYS, where, "")

    # -- dataset --------------------------------------------------------------
    ds = typed(raw, "dataset", dict, "a table [dataset]", where, "")
    check_keys(ds, _DATASET_KEYS, where, "dataset.")
    dataset_id = typed(ds, "id", str, "a non-empty string naming the dataset in the ledger", where, "dataset.")
    if not dataset_id.strip():
        raise fail(where, "dataset.id", "must be a non-empty string, got ''")
    total = _epsilon(ds.get("total_epsilon"), where, "dataset.total_epsilon") if "total_epsilon" in ds else None
    if total is None:
        raise fail(where, "dataset.total_epsilon", "missing; must be a number > 0 (the dataset's whole budget)")
    if ("path" in ds) == ("bundled" in ds):
        raise fail(where, "dataset", "give exactly one of path (a CSV or Parquet file or folder) or "
                    f"bundled (one of {sorted(BUNDLED)})")
    if "bundled" in ds:
        name = typed(ds, "bundled", str, f"one of {sorted(BUNDLED)}", where, "dataset.")
        if name not in BUNDLED:
            raise fail(where, "dataset.bundled", f"unknown bundled dataset {name!r}; allowed: {sorted(BUNDLED)}")
        if "format" in ds:
            raise fail(where, "dataset.format", "applies only with dataset.path")
        source = {"bundled": name}
    else:
        p = typed(ds, "path", str, "a path to a CSV or Parquet file or folder", where, "dataset.")
        fpath = Path(p)
        if not fpath.is_absolute() and base_dir is not None:
            fpath = base_dir / fpath
        fmt = typed(ds, "format", str, "\"csv\" or \"parquet\"", where, "dataset.", required=False)
        if fmt is None:
            low = fpath.name.lower()
            fmt = "parquet" if low.endswith((".parquet", ".pq")) or fpath.is_dir() else "csv"
        if fmt not in ("csv", "parquet"):
            raise fail(where, "dataset.format", f"must be \"csv\" or \"parquet\", got {fmt!r}")
        if not fpath.exists():
            raise fail(where, "dataset.path", f"{str(fpath)!r} does not exist")
        _check_regular(fpath, where)
        source = {"path": str(fpath), "format": fmt}
    max_line = typed(ds, "max_line_bytes", int, "an integer >= 1024 (bytes)", where, "dataset.", required=False,
                      default=DEFAULT_MAX_LINE_BYTES)
    if max_line < 1024:
        raise fail(where, "dataset.max_line_bytes", f"must be an integer >= 1024 (bytes), got {max_line}")
    columns_sel = str_list(ds, "columns", where, "dataset.", required=False)
    invalid_default = _invalid_mode(ds, where, "dataset.", None)
    protect_name = typed(ds, "protect", str, f"the name of a policy of [policies], or {PROTECT_DP!r}", where,
                          "dataset.", required=False)
    allow_disclosures = typed(ds, "allow_disclosures", bool, "true or false", where, "dataset.", required=False)

    # -- domain ---------------------------------------------------------------
    dom = typed(raw, "domain", dict, "a table of attributes [domain.NAME]", where, "")
    if not dom:
        raise fail(where, "domain", "must define at least one attribute, e.g. [domain.age]")
    attrs = []
    columns = {}
    invalid = {}
    for name, a in dom.items():
        pre = f"domain.{name}."
        if not isinstance(a, dict):
            raise fail(where, f"domain.{name}", f"must be a table with a type, got {a!r} ({type_name(a)})")
        typ = typed(a, "type", str, "\"ordinal\" or \"categorical\"", where, pre)
        if typ == "ordinal":
            check_keys(a, _ORDINAL_KEYS, where, pre)
            low = typed(a, "low", int, "an integer", where, pre)
            high = typed(a, "high", int, "an integer", where, pre)
            width = typed(a, "bin_width", int, "an integer >= 1", where, pre, required=False, default=1)
            try:
                attrs.append(Ordinal(name, low, high, width))
            except (TypeError, ValueError) as exc:
                raise fail(where, f"domain.{name}", str(exc)) from None
        elif typ == "categorical":
            check_keys(a, _CATEGORICAL_KEYS, where, pre)
            labels = typed(a, "labels", list, "a non-empty array of distinct labels", where, pre)
            try:
                attrs.append(Categorical(name, labels))
            except (TypeError, ValueError) as exc:
                raise fail(where, f"domain.{name}.labels", str(exc)) from None
        else:
            raise fail(where, f"{pre}type", f"must be \"ordinal\" or \"categorical\", got {typ!r}")
        col = typed(a, "column", str, "a column name of the table", where, pre, required=False, default=name)
        if columns_sel is not None and col not in columns_sel:
            raise fail(where, f"{pre}column", f"column {col!r} is not in dataset.columns {columns_sel}")
        columns[name] = col
        # data-independent by default: ordinal values are clamped into the domain, unknown labels dropped
        invalid[name] = _invalid_mode(a, where, pre, invalid_default or ("clamp" if typ == "ordinal" else "drop"))
    try:
        domain = Domain(attrs)
    except ValueError as exc:
        raise fail(where, "domain", str(exc)) from None
    try:
        raw_domain = _protection.raw_domain(domain)
    except ValueError as exc:
        raise fail(where, "domain", f"{exc}; the policies speak of values, not bins, so the values of the "
                   "attributes together must fit too") from None

    # -- policies -------------------------------------------------------------
    pols, policy_defs = read_policies(raw, where, PROTECT_DP)

    # -- releases -------------------------------------------------------------
    rels = typed(raw, "release", list, "an array of tables [[release]]", where, "")
    if not rels:
        raise fail(where, "release", "must list at least one [[release]]")
    if len(rels) > MAX_RELEASES:
        raise fail(where, "release", f"lists {len(rels)} releases; a spec may list at most {MAX_RELEASES} (split it "
                    "into several specs on the same dataset id: they share one budget)")
    releases: list[ReleaseSpec] = []
    seen = set()
    for k, r in enumerate(rels):
        key = f"release[{k}]"
        if not isinstance(r, dict):
            raise fail(where, key, f"must be a table, got {r!r}")
        pre = f"{key}."
        kind = typed(r, "kind", str, f"one of {sorted(KINDS)}", where, pre)
        if kind in UNAVAILABLE_KINDS:
            raise fail(where, f"{pre}kind", f"release kind {kind!r} is not available in this version; "
                        f"available: {sorted(KINDS)}")
        if kind not in KINDS:
            raise fail(where, f"{pre}kind", f"unknown release kind {kind!r}; allowed: {sorted(KINDS)}")
        handler = KINDS[kind]
        check_keys(r, _RELEASE_COMMON | set(handler.options), where, pre)
        name = typed(r, "name", str, "a unique non-empty string (used for file names)", where, pre)
        _check_name(name, where, f"{pre}name")
        public = typed(r, "public", bool, "true or false", where, pre, required=False, default=False)
        large = typed(r, "large_epsilon", bool, "true or false", where, pre, required=False, default=False)
        if name.casefold() in seen:  # file systems that ignore case would write one file for both
            raise fail(where, f"{pre}name", f"{name!r} is used by an earlier release (names must be unique, "
                        "ignoring case)")
        seen.add(name.casefold())
        if "epsilon" not in r:
            raise fail(where, f"{pre}epsilon", "missing; must be a number > 0")
        eps = _epsilon(r["epsilon"], where, f"{pre}epsilon")
        if eps > LARGE_EPSILON and not large:
            raise fail(where, f"{pre}epsilon", f"{_show(eps)} is above {LARGE_EPSILON}, where a release protects "
                        "next to nothing (odds may move by e^epsilon); set large_epsilon = true in this release "
                        "to mean it")
        if not handler.uses_policy:
            if "policy" in r:
                raise fail(where, f"{pre}policy", f"release kind {kind!r} does not take a policy (it has its own "
                            "discriminative pairs); remove the key")
            pol_name = ""
        elif "policy" not in r and handler.privacy_model(r) == "DP":
            pol_name = ""  # a DP baseline: its guarantee is plain bounded DP (the complete secret graph)
        else:
            pol_name = typed(r, "policy", str, f"one of the policies {sorted(policy_defs)}", where, pre)
        if pol_name and pol_name not in policy_defs:
            raise fail(where, f"{pre}policy", f"unknown policy {pol_name!r}; defined: {sorted(policy_defs)}")
        attributes = str_list(r, "attributes", where, pre)
        if not attributes:
            raise fail(where, f"{pre}attributes", f"must list at least one attribute of {list(domain.names)}")
        for a in attributes:
            if a not in domain.names:
                raise fail(where, f"{pre}attributes", f"unknown attribute {a!r}; the domain has {list(domain.names)}")
        if len(set(attributes)) != len(attributes):
            raise fail(where, f"{pre}attributes", f"attributes must be distinct, got {attributes}")
        sub = Domain([domain.attribute(a) for a in attributes])
        try:
            graph, policy_note = (raw_value_graph(policy_defs[pol_name], sub, where, f"policies.{pol_name}")
                                  if pol_name else (FullDomain(), ""))
            policy = Policy(sub, graph)
        except (TypeError, ValueError, UnsupportedPolicyError) as exc:
            if isinstance(exc, SpecError):
                raise
            raise fail(where, f"{pre}policy", f"policy {pol_name!r} does not fit attributes {attributes}: {exc}") from None
        options = {o: r[o] for o in handler.options if o in r}
        try:
            options = handler.validate(options, sub, policy)
        except OptionError as exc:
            raise fail(where, f"{pre}{exc.key}", f"{exc.message} (release {name!r})") from None
        where_items = ()
        if "where" in r:
            wtab = r["where"]
            if not isinstance(wtab, dict) or not wtab:
                raise fail(where, f"{pre}where", f"must be a table of attribute = value, e.g. {{ sex = \"f\" }}, got {wtab!r}")
            for wname, wvalue in wtab.items():
                if isinstance(wvalue, (list, dict)):
                    raise fail(where, f"{pre}where.{wname}", f"must be one value of the attribute, got "
                                f"{type_name(wvalue)}; intervals are not supported in where (use attributes and "
                                "ranges of a cdf release, or one release per value)")
                if wname not in domain.names:
                    raise fail(where, f"{pre}where.{wname}", f"unknown attribute; the domain has {list(domain.names)}")
                if wname not in attributes:
                    # the release's policy must cover the selecting attribute, or a change of it
                    # (secret or not) would move rows in and out of the release unaccounted for
                    raise fail(where, f"{pre}where.{wname}", f"must be one of the release's attributes {attributes}; "
                                "add it to attributes")
                try:
                    domain.attribute(wname).codes_of([wvalue])
                except (TypeError, ValueError) as exc:
                    raise fail(where, f"{pre}where.{wname}", str(exc).removeprefix("records: ")) from None
            where_items = tuple(sorted(wtab.items()))
        group = typed(r, "parallel", str, "a parallel group name (a string)", where, pre, required=False)
        releases.append(ReleaseSpec(name, kind, eps, pol_name, tuple(attributes), sub, policy, options, key,
                                    where_items, group, policy_note,
                                    policy_defs[pol_name] if pol_name else None, public, large))
    check_parallel_groups(releases, where)
    requested = _requested(releases)
    if requested > total:
        raise fail(where, "release", f"the releases ask for epsilon {_show(requested)} in total, more than "
                    f"dataset.total_epsilon = {_show(total)}")

    run = typed(raw, "run", dict, "a table [run]", where, "", required=False, default={})
    check_keys(run, _RUN_KEYS, where, "run.")
    seed = typed(run, "seed", int, "an integer >= 0 (seeded noise: for tests only, not secure)", where, "run.",
                  required=False)
    if seed is not None and seed < 0:
        raise fail(where, "run.seed", f"must be an integer >= 0, got {seed}")
    vectors_format = typed(run, "vectors", str, '"csv" or "parquet"', where, "run.", required=False, default="csv")
    if vectors_format not in VECTOR_FORMATS:
        raise fail(where, "run.vectors", f'must be "csv" or "parquet", got {vectors_format!r:.60}')
    if vectors_format == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise fail(where, "run.vectors", '"parquet" needs pyarrow, which is not installed '
                    "(pip install 'blowfish-privacy[parquet]'), or use \"csv\"")
    protect_name = _protection.protect_name(protect_name, releases, policy_defs, where)
    members = _protection.protect_members(protect_name, pols, policy_defs, releases, raw_domain, where)
    protection = _protection.protection(protect_name, members, raw_domain, columns)
    for rel in releases:
        _protection.admit(rel, protect_name, members, raw_domain, where)
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
        raise fail(where, key, f"must be {allowed}, got {name!r}")
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise fail(where, key, f"must be {allowed}, got a name of {len(name.encode('utf-8', 'surrogatepass'))} "
                    "bytes")
    if name.casefold() in RESERVED_NAMES:
        raise fail(where, key, f"{name!r} is a file the run writes itself; must be {allowed}")


def _check_regular(path: Path, where: str) -> None:
    """Refuse special files (FIFOs, devices, sockets) before anything opens them: reading one may block."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise fail(where, "dataset.path", f"{str(path)!r} cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        return
    raise fail(where, "dataset.path", f"{str(path)!r} is not a regular file or folder (a pipe, device or socket "
                "is refused: reading one may never end)")


def _show(f: Fraction) -> str:
    # whole numbers as written, but not 1e300's 301 digits; Decimal: a sum of epsilons may pass the float range
    if f.denominator == 1 and abs(f) < 10**15:
        return str(f.numerator)
    try:
        return f"{float(f):.6g}"
    except OverflowError:
        return f"{Decimal(f.numerator) / Decimal(f.denominator):.5e}"


def _invalid_mode(table: dict, where: str, prefix: str, default: str | None = "error") -> str | None:
    mode = typed(table, "invalid", str, f"one of {list(_INVALID)}", where, prefix, required=False, default=default)
    if mode is not None and mode not in _INVALID:
        raise fail(where, f"{prefix}invalid", f"must be one of {list(_INVALID)} (what to do with a value outside "
                    f"the domain), got {mode!r}")
    return mode
