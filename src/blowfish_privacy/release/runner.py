"""Running a validated spec: plan, aggregate, spend, measure, write the outputs.

Order (each step can fail without spending, until the spend; everything
up to step 4 reads public inputs and the ledger only, never the data):

1. every release builds its :class:`~blowfish_privacy.mechanisms.Plan` from
   public inputs only (spec, domain, policy, epsilon): calibrations,
   budget split, expected error, memory.  The memory the whole run needs is
   checked against the machine here, and a release that would be exact
   (sensitivity 0, or noise that is 0 with probability above 0.99) is
   refused unless marked ``public``.  ``plan_spec`` stops after this step
   (``blowfish release --dry-run``);
2. a seeded spec is refused unless the caller asked for a test run
   (``allow_seeded``);
3. the output folder must be new or empty (unless ``overwrite``) and is
   checked writable;
4. the ledger admits the run (:meth:`Ledger.admit`): the dataset's
   registration (total, protection policy, disclosure setting), the
   remaining budget, and the disclosures the run makes (a seeded test, a
   domain check with ``invalid = "error"``, releases marked ``public``),
   which are recorded now, whatever the run's outcome, or refused when the
   dataset does not allow disclosures;
5. the engine computes the exact aggregates (missing columns, and values
   outside the domain when ``invalid = "error"``, fail here with
   messages that quote no data), and the input's data version (a keyed
   hash of its content);
6. the plans measure (noise, post-processing) in memory; nothing is shown;
7. the ledger records the spend *and the results* in one transaction (or
   refuses, and the results are dropped unseen); a seeded test spends
   nothing (its disclosure is recorded in step 4);
8. JSON, CSV and PNG files are exported, each written to a temporary file
   and renamed.  A failure here loses nothing: ``blowfish ledger export``
   writes the run again from the ledger.  Nothing after the spend branches
   visibly on the data.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import numbers
import os
import shutil
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .._validation import available_memory
from ..policy.domain import Ordinal
from ..errors import BudgetExceededError, DataError, ExportError, LedgerError, MissingDependencyError, OptionError, SpecError
from ..noise import Generator
from .fingerprint import SpecialFileError, source_state, version_digest, version_needs
from .._atomic import atomic_write
from .figures import save_release_figures
from .document import exact_reason, jsonable, policy_text, release_document
from ._ledger_blob import pack_result
from .kinds import KINDS
from .ledger import Disclosure, Ledger, Spend, guarantee_text
from .spec import Spec, valid_release_name
from .vector_files import write_csv, write_parquet

if TYPE_CHECKING:
    from .aggregation import Engine

__all__ = ["run_spec", "plan_spec", "check_flags", "check_memory_limit", "export_results", "ExportError", "RunResult", "SpecPlan", "VECTOR_INLINE_LIMIT",
           "available_memory"]

#: Vectors longer than this go to a CSV file beside the JSON.
VECTOR_INLINE_LIMIT = 1000


@dataclass
class RunResult:
    out_dir: Path
    releases: list[dict[str, Any]]  # the JSON documents written
    files: list[Path]  # paths written
    plots_skipped: str = ""
    run: str = ""  # the run's id in the ledger


def _needs(spec: Spec) -> list:
    """The aggregates the spec's releases need, each once, in the order of the releases."""
    return list(_first_release_of_need(spec))


def _first_release_of_need(spec: Spec) -> dict:
    """``{need: the first release needing it}``: its domain (``rel.domain``) is the need's."""
    first: dict = {}
    for rel in spec.releases:
        first.setdefault(_need(rel), rel)
    return first


def _need(rel) -> tuple:
    base = (KINDS[rel.kind].aggregate, rel.attributes)
    return base + (rel.where,) if rel.where else base


#: Words (8 bytes) per domain cell assumed for a mechanism before its plan
#: gives a better estimate (the largest of the library's plans uses ~12).
_WORDS_PER_CELL = 16


def _gib(b: float) -> str:
    return f"{b / 2**30:.3g} GiB"


@dataclass
class SpecPlan:
    """The plans of a spec's releases, from public inputs only."""

    spec: Spec
    plans: dict  # release name -> Plan
    memory_bytes: int  # aggregates kept together plus the largest measurement
    available_bytes: int | None

    @property
    def epsilon(self):
        return self.spec.epsilon_requested

    def describe(self, remaining=None) -> dict:
        out = {
            "dataset": self.spec.dataset_id,
            "spec": self.spec.path,
            "epsilon_requested": float(self.spec.epsilon_requested),
            "memory_bytes": self.memory_bytes,
            "releases": [],
        }
        for rel in self.spec.releases:
            d = {"name": rel.name, "kind": rel.kind, "attributes": list(rel.attributes),
                 "where": dict(rel.where) or None, "parallel_group": rel.parallel,
                 "policy": rel.policy_name or None, "epsilon": float(rel.epsilon)}
            d.update(self.plans[rel.name].describe())
            out["releases"].append(d)
        if remaining is not None:
            out["remaining_epsilon_before"] = float(remaining)
            out["remaining_epsilon_after"] = float(remaining - self.spec.epsilon_requested)
        return out


def check_flags(**flags: object) -> None:
    """Refuse a flag that is not a bool: ``plots="no"`` is true in Python and would do the opposite of what it says."""
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {value!r} of type {type(value).__name__}")


def check_memory_limit(memory_limit: object) -> None:
    """``memory_limit``: a number of bytes (an int >= 1), or None for the memory available now."""
    if memory_limit is None:
        return
    if isinstance(memory_limit, (bool, np.bool_)) or not isinstance(memory_limit, (numbers.Integral, np.integer)):
        raise TypeError(f"memory_limit must be a number of bytes (an int >= 1, e.g. 2**30 for 1 GiB) or None (the "
                        f"memory available now), got {memory_limit!r} of type {type(memory_limit).__name__}")
    if memory_limit < 1:
        raise ValueError(f"memory_limit must be a number of bytes (an int >= 1, e.g. 2**30 for 1 GiB) or None (the "
                         f"memory available now), got {int(memory_limit)}")


def plan_spec(spec: Spec, *, memory_limit: int | None = None) -> SpecPlan:
    """Plan every release of ``spec``: no data read, nothing spent.

    Raises :class:`SpecError` for a release that cannot be planned (an
    option or policy it cannot honour, a selection whose row count would be
    released exactly) and when the run would need more memory than
    ``memory_limit`` bytes (default: the memory available now).
    """
    check_memory_limit(memory_limit)
    limit = available_memory() if memory_limit is None else int(memory_limit)
    avail = "available" if memory_limit is None else "of memory_limit"
    # a column need holds memory per row, not per domain value (the engine streams histograms only)
    agg_bytes = sum(8 * rel.domain.size for need, rel in _first_release_of_need(spec).items()
                    if need[0] == "histogram")
    # before building any plan: a plan of a huge domain may itself allocate
    # (kinds that read the raw column hold no array over the domain)
    cells = [rel for rel in spec.releases if KINDS[rel.kind].aggregate == "histogram"]
    rough = agg_bytes + max((8 * _WORDS_PER_CELL * rel.domain.size for rel in cells), default=0)
    if limit is not None and rough > limit:
        big = max(cells, key=lambda r: r.domain.size)
        raise SpecError(
            f"{spec.path}: {big.key}.attributes: the releases need about {_gib(rough)} of memory (domain of "
            f"{big.domain.size:,} values for {list(big.attributes)}), more than the {_gib(limit)} {avail}; "
            "use a coarser domain (bin_width) or fewer attributes")
    plans = {}
    for rel in spec.releases:
        try:
            plans[rel.name] = KINDS[rel.kind].plan(rel)
        except OptionError as exc:
            raise SpecError(f"{spec.path}: {rel.key}.{exc.key}: {exc.message}") from None
        except MissingDependencyError as exc:
            raise SpecError(f"{spec.path}: {rel.key}: {exc}") from None
        except (ValueError, NotImplementedError) as exc:
            raise SpecError(f"{spec.path}: {rel.key}.policy: release kind {rel.kind!r} is not supported under "
                            f"policy {rel.policy_name!r}: {exc}") from None
    need = agg_bytes + max(p.memory_bytes for p in plans.values())
    if limit is not None and need > limit:
        raise SpecError(f"{spec.path}: release: the releases need about {_gib(need)} of memory, more than the "
                        f"{_gib(limit)} {avail}; use a coarser domain (bin_width) or fewer attributes")
    for rel in spec.releases:
        dropping = [a for a in rel.attributes if spec.invalid.get(a) == "drop"]
        if KINDS[rel.kind].needs_public_total and dropping:
            raise SpecError(f"{spec.path}: domain.{dropping[0]}.invalid: release {rel.name!r} ({rel.kind}) publishes "
                            "its row count exactly, and invalid = \"drop\" would make that count tell how many "
                            "rows were dropped; use \"clamp\" (out-of-range values clamped, other cells counted as "
                            "the attribute's low value) or \"error\"")
        why = exact_reason(plans[rel.name])
        if why and not rel.public:
            raise SpecError(f"{spec.path}: {rel.key}: release {rel.name!r} would publish exact values: {why}; it "
                            "would be labelled private but protect nothing. Use a larger noise scale (smaller "
                            "epsilon, another policy), or set public = true to release it as an exact, non-private "
                            "disclosure")
        if rel.public and not why:
            raise SpecError(f"{spec.path}: {rel.key}.public: release {rel.name!r} adds noise calibrated to its "
                            "policy; public = true is only for releases that are exact (sensitivity 0 or noise "
                            "that is almost always 0); remove it")
    return SpecPlan(spec, plans, need, limit)


def _check_writable(out: Path) -> bool:
    """Create ``out`` (if needed) and check a file can be written there; returns whether it was created."""
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".blowfish-write-check-{uuid.uuid4().hex[:8]}"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        if created:
            try:
                out.rmdir()
            except OSError:
                pass
        raise SpecError(f"--out (out_dir in Python): cannot write into the output folder {str(out)!r}: "
                        f"{exc.strerror or exc}") from None
    return created


#: Bytes written per released value (a CSV cell or JSON number with its
#: separator, generously) and per release (JSON fields, a PNG).
_BYTES_PER_VALUE = 32
_BYTES_PER_RELEASE = 1 << 20


def planned_output_bytes(spec: Spec) -> int:
    """An upper estimate of what a run writes (files, and the ledger's copy), from the domain alone."""
    values = 0
    for rel in spec.releases:
        values += 2 * rel.domain.size if KINDS[rel.kind].aggregate == "histogram" else 16
    return values * _BYTES_PER_VALUE + len(spec.releases) * _BYTES_PER_RELEASE


def _check_space(spec: Spec, out: Path, ledger_path, seeded: bool) -> None:
    """Refuse before the spend when the output folder (or the ledger's) lacks the space the run needs."""
    need = planned_output_bytes(spec)
    places = [(out, "--out", need)] + ([] if seeded else [(Path(ledger_path).parent, "--ledger", need)])
    for folder, key, size in places:
        try:
            free = shutil.disk_usage(folder).free
        except OSError:
            continue  # not measurable here: the write itself still fails safely (the ledger keeps the results)
        if free < size:
            raise SpecError(f"{key}: {str(folder)!r} has {free / 2**20:.1f} MiB free; the run writes up to about "
                            f"{size / 2**20:.1f} MiB (a planned estimate from the domain); free some space or "
                            "choose another folder")


def run_spec(spec: Spec, *, engine: Engine, ledger: Ledger, out_dir: str | os.PathLike[str], plots: bool = True,
             allow_seeded: bool = False, memory_limit: int | None = None, overwrite: bool = False) -> RunResult:
    """Run every release of ``spec``; returns what was written.

    A spec with ``run.seed`` is a test, not a private release (anyone with
    the seed can subtract the noise): it is refused unless
    ``allow_seeded=True``, and then nothing is spent in the ledger and every
    output says "seeded: NOT private".  ``out_dir`` must be new or empty
    unless ``overwrite=True``: earlier paid-for results are never replaced
    silently.  The results are measured in memory, stored in the ledger in
    the spend's transaction, then exported from there, so a failed write
    loses nothing (``blowfish ledger export RUN``).

    Returns
    -------
    RunResult
        The JSON documents written, the files, the run's id in the ledger.

    Privacy
    -------
    As :func:`blowfish_privacy.release.release`: each release (epsilon_i,
    P_i)-Blowfish private by its plan, the run charged their composition
    before anything is written.

    Sensitivity
    -----------
    Per release, as its plan states.

    Runtime
    -------
    One aggregation pass by ``engine``, then each mechanism's plan runtime.

    References
    ----------
    He, Machanavajjhala, Ding, "Blowfish Privacy", SIGMOD 2014, Sec 4.2
    (composition).
    """
    # what a Python caller passes is checked before anything is planned, opened or read
    check_flags(plots=plots, allow_seeded=allow_seeded, overwrite=overwrite)
    if not isinstance(spec, Spec):
        raise TypeError(f"spec must be a parsed spec (load_spec(path) or parse_spec(text)), got {type(spec).__name__}")
    if not isinstance(ledger, Ledger):
        raise TypeError(f"ledger must be a Ledger (Ledger(path)), got {type(ledger).__name__}")
    if not callable(getattr(engine, "aggregate", None)):
        raise TypeError(f"engine must be an engine object (LocalEngine(), make_engine('dask'), ...), got "
                        f"{type(engine).__name__}")
    splan = plan_spec(spec, memory_limit=memory_limit)
    plans = splan.plans
    seeded = spec.seed is not None
    if seeded and not allow_seeded:
        raise SpecError(f"{spec.path}: run.seed: a seeded run is a test, not a private release (the seed lets anyone "
                        "subtract the noise); pass --seeded-test (allow_seeded=True in Python) to run it as a recorded "
                        "disclosure (the dataset must allow disclosures), or remove run.seed")
    run_id = uuid.uuid4().hex[:12]
    spends = [Spend(r.name, r.kind, r.epsilon, policy_text(r, plans[r.name]),
                    None if r.parallel is None else f"{r.parallel}@{run_id}",
                    _public_disclosure(r, plans[r.name]) if r.public else None) for r in spec.releases]
    disclosures = run_disclosures(spec)

    out = Path(out_dir)
    if not overwrite and out.is_dir() and any(out.iterdir()):
        raise SpecError(f"--out: the output folder {str(out)!r} is not empty; earlier results are never replaced "
                        "silently: choose a new folder or pass --overwrite (out_dir and overwrite=True in Python)")
    created = _check_writable(out)
    with _refused(spec, ledger, out, created, None):
        _check_space(spec, out, ledger.path, seeded)
    with _refused(spec, ledger, out, created, "; nothing was read"):
        # the ledger decides before the data are read; disclosures are recorded here
        ledger.admit(spec.dataset_id, spec.total_epsilon, spec.protection, [] if seeded else spends,
                     allow_disclosures=spec.allow_disclosures, disclosures=disclosures, spec_sha256=spec.sha256,
                     run=run_id)
    with _refused(spec, ledger, out, created, None):
        aggregates, version = _aggregate(spec, engine, ledger)

    # -- measure in memory (nothing is shown before the spend) ------------------
    gen = Generator(seed=spec.seed) if spec.seed is not None else Generator()
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    measured = []
    for rel in spec.releases:
        plan = plans[rel.name]
        output = KINDS[rel.kind].run(rel, aggregates[_need(rel)], gen, plan)
        doc = release_document(spec, rel, plan, output, engine.name, seeded, now, run_id)
        vectors = {k: np.asarray(v) for k, v in output.vectors.items()}
        measured.append((rel, doc, vectors, output.plot))

    if not seeded:  # a seeded test run spends nothing (its disclosure is recorded)
        with _refused(spec, ledger, out, created, ""):
            ledger.spend(spec.dataset_id, spec.total_epsilon, spends, spec_sha256=spec.sha256,
                         results=[pack_result(doc, vec) for _, doc, vec, _ in measured], run=run_id,
                         protection=spec.protection, data_version=version,
                         allow_disclosures=spec.allow_disclosures)

    # -- the budget is committed and the results are in the ledger: export ------
    summary = {
        "dataset": spec.dataset_id, "spec": spec.path, "spec_sha256": spec.sha256,
        "ledger": str(ledger.path), "engine": engine.name, "run": run_id,
        "releases": [{"name": d["name"], "kind": d["kind"], "epsilon_spent": d.get("epsilon_spent"),
                      "file": f"{d['name']}.json"} for _, d, _, _ in measured],
        "remaining_epsilon": _remaining(ledger, spec),
        "dataset_policy": spec.protection.text,
        "guarantee": _dataset_guarantee(ledger, spec),
        "disclosures": [d.what for d in disclosures] + [s.disclosure for s in spends if s.disclosure],
        "seeded": seeded,
        "privacy": ("seeded: NOT private (a test run; nothing spent; recorded in the ledger as a disclosure)"
                    if seeded else "private" if not any(s.disclosure for s in spends)
                    else "private, with releases marked public (exact: not private)"),
    }
    try:
        docs, files, skipped = export_results(out, [(d, v, plot) for _, d, v, plot in measured], summary,
                                              plots=plots)
    except OSError as exc:
        where = "" if seeded else (f"; the results are kept in the ledger: blowfish ledger export {run_id} "
                                   f"{ledger.path} --out NEW_FOLDER")
        raise ExportError(f"--out: writing into {str(out)!r} failed ({exc.strerror or exc}){where}") from None
    return RunResult(out, docs, files, skipped, run_id)


def export_results(out: Path, releases, summary: dict | None, *, plots: bool = True):
    """Write JSON, CSV or Parquet (long vectors) and PNG files of ``releases`` into ``out``, atomically per file.

    ``releases`` holds ``(doc, vectors, plot or None)``; used after a run and
    by ``blowfish ledger export``.  The long vectors' format is the
    document's ``vectors_format`` (the spec's ``run.vectors``; ``"csv"``
    where a document has none), so an export writes the files of the run
    again byte for byte.  Returns ``(docs, files, note)``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plt = None
    skipped = ""
    if plots and any(p is not None for _, _, p in releases):
        try:  # matplotlib is optional (the plot extra)
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            skipped = "plots skipped: matplotlib is not installed (pip install 'blowfish-privacy[plot]')"
    docs, files, figures = [], [], []
    for doc, vectors, plot in releases:
        doc = dict(doc)
        name = doc.get("name")
        if not valid_release_name(name):  # only a tampered ledger holds such a name
            raise ExportError(f"--out: a stored release has a name that is not a valid file name ({name!r:.60}); "
                              "nothing of it was written")
        for vname, vec in vectors.items():
            if vec.size <= VECTOR_INLINE_LIMIT:
                doc[vname] = [jsonable(x) for x in vec.tolist()]
        big = {k: v for k, v in vectors.items() if v.size > VECTOR_INLINE_LIMIT}
        if big:
            if doc.get("vectors_format", "csv") == "parquet":
                vec_path = out / f"{name}.parquet"
                atomic_write(vec_path, lambda fh, big=big: write_parquet(fh, big), binary=True)
            else:
                vec_path = out / f"{name}.csv"
                atomic_write(vec_path, lambda fh, big=big: write_csv(fh, big))
            doc["vectors_file"] = vec_path.name
            files.append(vec_path)
        if plt is not None and plot is not None:
            png = out / f"{name}.png"
            figures.append((doc, vectors, plot, png))  # drawn below: releases of one kind share a y-range
            doc["plot"] = png.name
            files.append(png)
        path = out / f"{name}.json"
        text = json.dumps(doc, indent=2, default=str)
        atomic_write(path, lambda fh, text=text: fh.write(text))
        files.append(path)
        docs.append(doc)
    if figures:
        save_release_figures(plt, figures)
    if summary is not None:
        path = out / "summary.json"
        text = json.dumps(summary, indent=2)
        atomic_write(path, lambda fh, text=text: fh.write(text))
        files.append(path)
    return docs, files, skipped


def _remaining(ledger, spec):
    left = ledger.remaining(spec.dataset_id)
    return float(spec.total_epsilon if left is None else left)


def _dataset_guarantee(ledger, spec) -> str:
    s = ledger.summary().get(spec.dataset_id)
    if s is None:
        return guarantee_text(0, spec.total_epsilon, spec.protection.text)
    return s["guarantee"]


def _aggregate(spec, engine, ledger) -> tuple:
    """The exact aggregates of the releases and the data version; refuses data recorded under another id.

    The version is made of every attribute's counts (:mod:`.fingerprint`),
    read in the same pass.  It is checked against the ledger before any
    outcome of the read is shown: a domain check (``invalid = "error"``)
    that fails is reported only after the data were found not to belong to
    another dataset, so its outcome cannot be had under a new id.
    """
    before = _state(spec)
    needs = _needs(spec)
    vneeds = [n for n in version_needs(spec) if n not in needs]
    deferred = None
    try:
        aggregates = engine.aggregate(spec, needs + vneeds)
    except DataError as exc:
        if not spec.disclosure_checks:
            raise
        deferred = exc  # the domain check failed (or the data cannot be read: then so does the next line)
        # the version from the counts the default rules give (ordinal values clamped, unknown labels dropped)
        lenient = dataclasses.replace(spec, invalid={
            a: (("clamp" if isinstance(spec.domain.attribute(a), Ordinal) else "drop") if m == "error" else m)
            for a, m in spec.invalid.items()})
        aggregates = engine.aggregate(lenient, version_needs(spec))
    if _state(spec) != before:  # a torn read: some rows from before a rewrite, some after
        raise DataError(f"{spec.path}: dataset.path: the data changed while they were read (a file's size or "
                        "modification time differs); nothing was spent: run again on data that stay put")
    version = ledger.data_version(version_digest(spec, aggregates))
    ledger.check_data_version(spec.dataset_id, version)
    if deferred is not None:
        raise deferred
    return aggregates, version


def _state(spec) -> list:
    try:
        return source_state(spec)
    except SpecialFileError as exc:
        raise DataError(f"{spec.path}: dataset.path: {exc} (a pipe, device or socket is refused: reading one may "
                        "never end)") from None
    except OSError as exc:
        raise DataError(f"{spec.path}: dataset.path: cannot read the data ({exc.strerror or type(exc).__name__})") \
            from None


def run_disclosures(spec) -> list:
    """The exact, non-private disclosures a run of ``spec`` makes besides releases marked public."""
    out = []
    if spec.seed is not None:
        names = ", ".join(r.name for r in spec.releases)
        out.append(Disclosure("seeded test run", "seeded test",
                              f"the exact aggregates of {names}: run.seed = {spec.seed} regenerates the noise"))
    checks = spec.disclosure_checks
    if checks:
        out.append(Disclosure("domain check", "invalid = error",
                              f"whether every row's {', '.join(checks)} lies in the domain (invalid = \"error\" "
                              "refuses the run otherwise)"))
    return out


def _public_disclosure(rel, plan) -> str:
    return f"the exact {rel.kind} of {list(rel.attributes)} (public = true: {exact_reason(plan)})"


@contextlib.contextmanager
def _refused(spec, ledger, out: Path, created: bool, ledger_suffix: str | None):
    """On any failure: remove the output folder this run created (while empty); with ``ledger_suffix`` not
    None, a budget or ledger refusal is re-raised naming the spec and the ledger."""
    try:
        yield
    except BaseException as exc:
        if created:
            _remove_empty(out)
        if ledger_suffix is not None and isinstance(exc, (BudgetExceededError, LedgerError)):
            raise type(exc)(f"{spec.path}: dataset: {exc} (ledger {ledger.path}){ledger_suffix}") from None
        raise


def _remove_empty(out: Path) -> None:
    try:
        out.rmdir()
    except OSError:
        pass
