"""Release kinds for the 1-D histogram mechanisms (transformed, DAWA, matching, Privelet)."""

import json

from release_specs import NEAR, release, spec_toml

from blowfish_privacy.cli import main

ADULT_AGE = {"type": "ordinal", "low": 17, "high": 90}

SPEC = spec_toml(
    {"id": "adult-hist", "bundled": "adult", "total_epsilon": 3, "protect": "age_line", "allow_disclosures": True},
    {"age": ADULT_AGE},
    {"age_line": {"secrets": "line"}, "age_within_3": {**NEAR, "theta": 3}},
    [release("age-transformed", "transformed", ["age"], 0.5, "age_within_3"),
     release("age-dawa-transformed", "dawa_transformed", ["age"], 0.5, "age_line", ratio=0.4),
     release("age-matching", "matching", ["age"], 0.5, "age_line"),
     release("age-dawa", "dawa", ["age"], 0.5),
     release("age-privelet", "privelet", ["age"], 0.5)],
    run={"seed": 7},
)


def test_histogram_kinds_release_end_to_end(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    code = main(["release", str(spec), "--ledger", str(tmp_path / "l.sqlite"), "--new-ledger", "--out", str(out), "--no-plots", "--quiet",
                 "--seeded-test"])
    assert code == 0
    docs = {p.stem: json.loads(p.read_text()) for p in out.glob("age-*.json")}
    assert set(docs) == {"age-transformed", "age-dawa-transformed", "age-matching", "age-dawa", "age-privelet"}
    for name, doc in docs.items():
        assert 0 < doc["epsilon_spent"] <= 0.5, name
        assert doc["secure"] is False
    assert docs["age-transformed"]["stretch"] == 3
    assert docs["age-transformed"]["sensitivity"]["value"] == 3
    assert docs["age-dawa"]["guarantee"] == "FullDomain"


def test_dp_baseline_kinds_refuse_a_policy_and_bad_ratio(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.replace('name = "age-dawa"\nkind = "dawa"\nattributes = ["age"]\n',
                                 'name = "age-dawa"\nkind = "dawa"\nattributes = ["age"]\npolicy = "age_line"\n'))
    assert main(["release", str(spec), "--ledger", str(tmp_path / "l.sqlite"), "--new-ledger", "--out", str(tmp_path / "o")]) == 2
    assert "does not take a policy" in capsys.readouterr().err
    spec.write_text(SPEC.replace("ratio = 0.4", "ratio = 1.5"))
    assert main(["release", str(spec), "--ledger", str(tmp_path / "l.sqlite"), "--new-ledger", "--out", str(tmp_path / "o")]) == 2
    assert "ratio" in capsys.readouterr().err


def _kmeans_spec(**options) -> str:
    """A seeded k-means release (k = 3) of adult age and hours per week under a distance threshold."""
    return spec_toml({"id": "adult-km", "bundled": "adult", "total_epsilon": 1, "allow_disclosures": True},
                     {"age": ADULT_AGE, "hours_per_week": {"type": "ordinal", "low": 1, "high": 99}},
                     {"close": NEAR},
                     [release("age-hours-kmeans", "kmeans", ["age", "hours_per_week"], 1, "close", k=3, **options)],
                     run={"seed": 3})


KMEANS_SPEC = _kmeans_spec(method="sulq", iterations=4, init=[[25, 20], [40, 40], [60, 60]])


def test_kmeans_kind_releases_centroids_and_per_round_sensitivities(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(KMEANS_SPEC)
    out = tmp_path / "out"
    assert main(["release", str(spec), "--ledger", str(tmp_path / "l.sqlite"), "--new-ledger", "--out", str(out), "--no-plots", "--quiet",
                 "--seeded-test"]) == 0
    doc = json.loads((out / "age-hours-kmeans.json").read_text())
    assert len(doc["centroids"]) == 3 and len(doc["per_round"]) == 4
    assert 0 < doc["epsilon_spent"] <= 1
    assert all(r["sum_sensitivity"] > 0 for r in doc["per_round"])
    spec.write_text(KMEANS_SPEC.replace("k = 3", "k = 0"))
    assert main(["release", str(spec), "--ledger", str(tmp_path / "l2.sqlite"), "--new-ledger", "--out", str(tmp_path / "o2")]) == 2


def test_kmeans_kind_grid_default_sizes_its_grid_from_the_public_row_count(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    text = _kmeans_spec()
    assert 'method' not in text and "init" not in text
    spec.write_text(text)
    assert main(["plan", str(spec)]) == 0
    assert "per round" in capsys.readouterr().out  # the scale follows from the cell, fixed at the measurement
    out = tmp_path / "out"
    assert main(["release", str(spec), "--ledger", str(tmp_path / "l.sqlite"), "--new-ledger", "--out", str(out),
                 "--no-plots", "--quiet", "--seeded-test"]) == 0
    doc = json.loads((out / "age-hours-kmeans.json").read_text())
    assert doc["method"] == "grid" and len(doc["centroids"]) == 3 and doc["cell"] >= 1
    assert 0 < doc["epsilon_spent"] <= 1 and doc["grid_sensitivity"] >= 1
    spec.write_text(text.replace("k = 3", "k = 3\ncell = 8"))
    out2 = tmp_path / "out2"
    assert main(["release", str(spec), "--ledger", str(tmp_path / "l.sqlite"), "--new-ledger", "--out", str(out2),
                 "--no-plots", "--quiet", "--seeded-test"]) == 0
    assert json.loads((out2 / "age-hours-kmeans.json").read_text())["cell"] == 8
    spec.write_text(text.replace("k = 3", "k = 3\nsize_fraction = 0.5"))
    assert main(["release", str(spec), "--ledger", str(tmp_path / "l.sqlite"), "--out", str(tmp_path / "o3")]) == 2
    assert "applies only to method 'sulq'" in capsys.readouterr().err
