"""Shared spec text, spec builders and data for the release tests.

Specs are built from their tables with :func:`spec_toml` (the TOML is
written here, once), from the attributes and policies the tests share
(:data:`AGE`, :data:`SEX`, :data:`INCOME`, :data:`FULL_DOMAIN`, ...), so a
test states only what its spec is about.  :func:`write_csv` writes the
people tables.
"""

import csv
import json

import numpy as np

#: Attributes of the "people" table.
AGE = {"type": "ordinal", "low": 0, "high": 99}
SEX = {"type": "categorical", "labels": ["f", "m"]}
INCOME = {"type": "ordinal", "low": 0, "high": 9}

#: Policies the tests share.
FULL_DOMAIN = {"secrets": "full_domain"}
NEAR = {"secrets": "distance_threshold", "theta": 5}
BY_SEX = {"secrets": "partition", "by": ["sex"]}


def toml_value(v) -> str:
    """A TOML value: strings, booleans, numbers, arrays and inline tables."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML for {v!r}")


def toml_table(header: str, fields: dict) -> str:
    """``[header]`` and its ``key = value`` lines (``header`` "[release]" gives an array table)."""
    return "\n".join([f"[{header}]"] + [f"{k} = {toml_value(v)}" for k, v in fields.items()]) + "\n"


def release(name: str, kind: str, attributes, epsilon, policy: str | None = None, **options) -> dict:
    """One ``[[release]]`` table."""
    out = {"name": name, "kind": kind, "attributes": list(attributes)}
    if policy is not None:
        out["policy"] = policy
    return {**out, "epsilon": epsilon, **options}


def spec_toml(dataset: dict, domain: dict, policies: dict | None = None, releases=(), run: dict | None = None) -> str:
    """The TOML text of a spec from its tables: ``{attribute: fields}``, ``{policy: fields}``, release tables."""
    parts = [toml_table("dataset", dataset)]
    parts += [toml_table(f"domain.{name}", fields) for name, fields in domain.items()]
    parts += [toml_table(f"policies.{name}", fields) for name, fields in (policies or {}).items()]
    parts += [toml_table("[release]", r) for r in releases]
    if run is not None:
        parts.append(toml_table("run", run))
    return "\n".join(parts)


def people_dataset(path="people.csv", total_epsilon=1.0, **extra) -> dict:
    """The ``[dataset]`` table of the people table (``path=None``: no source, for an in-memory table)."""
    out = {"id": "people"}
    if path is not None:
        out["path"] = path
    return {**out, "total_epsilon": total_epsilon, **extra}


def protected_by(**members) -> dict:
    """Policies for a spec whose dataset is protected under the pairs all ``members`` protect.

    ``members`` maps a policy name to ``(policy table, attributes it speaks of)``; the result
    holds those policies (with their ``attributes``) and ``protected``, their intersection
    (or the one policy itself), to name in ``dataset.protect``.
    """
    out = {name: {**table, "attributes": list(attrs)} for name, (table, attrs) in members.items()}
    out["protected"] = ({"secrets": "intersection", "of": list(members)} if len(members) > 1
                        else {**next(iter(out.values()))})
    return out


#: The policy the BASE dataset is protected under: the pairs both of its release policies protect.
BOTH = {"secrets": "intersection", "of": ["near", "by_sex"]}

BASE = spec_toml(
    people_dataset(protect="both", allow_disclosures=True),
    {"age": AGE, "sex": SEX},
    {"near": {**NEAR, "attributes": ["age"]}, "by_sex": {**BY_SEX, "attributes": ["sex", "age"]}, "both": BOTH},
    [release("age-cdf", "cdf", ["age"], 0.25, "near", ranges=[[10, 20]], quantiles=[0.5]),
     release("age-sex", "histogram", ["sex", "age"], 0.25, "by_sex")],
)

#: Appended to a spec: a seeded test run (NOT private; needs --seeded-test and a dataset registered with
#: allow_disclosures = true, as BASE's is; the run is recorded in the ledger as a disclosure).
SEEDED = "\n[run]\nseed = 7\n"


def people(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 100, n), rng.choice(["f", "m"], n)


def write_csv(path, columns: dict, *, opener=open, encoding="utf-8", lineterminator="\r\n") -> None:
    """A CSV file with a header of the column names and one row per value of the columns."""
    with opener(path, "wt", newline="", encoding=encoding) as fh:
        w = csv.writer(fh, lineterminator=lineterminator)
        w.writerow(list(columns))
        w.writerows(zip(*(np.asarray(c).tolist() for c in columns.values())))
