"""Every numeric option of every ``blowfish bench NAME``, given a bad value, stops at parsing: one error line
(argparse's, after its usage) naming the option, the value and what is allowed; exit status 2; no
traceback and nothing run (no output folder)."""

import pytest

from blowfish_privacy.cli import main

BAD = ("-1", "0", "nan", "inf", "abc", "1e400", "1.5")

#: (bench, option, what the message says is allowed, values that are valid for it among BAD)
OPTIONS = [
    ("range-queries", "--epsilons", "finite number > 0", ("1.5",)),
    ("range-queries", "--repetitions", "whole number >= 1", ()),
    ("range-queries", "--queries", "whole number >= 1", ()),
    ("range-queries", "--thetas", "whole number >= 1 (dollars) or 'full'", ()),
    ("kmeans", "--epsilons", "finite number > 0", ("1.5",)),
    ("kmeans", "--repetitions", "whole number >= 1", ()),
    ("kmeans", "--thetas", "whole number >= 1", ()),
    ("kmeans", "--iterations", "whole number >= 1", ()),
    ("kmeans", "--threads", "whole number >= 1", ()),
    ("histograms", "--epsilons", "finite number > 0", ("1.5",)),
    ("histograms", "--repetitions", "whole number >= 1", ()),
    ("dpbench", "--epsilons", "finite number > 0", ("1.5",)),
    ("dpbench", "--repetitions", "whole number >= 1", ()),
    ("dpbench", "--queries", "whole number >= 1", ()),
    ("dpbench", "--seed", "whole number >= 0", ("0",)),
    ("dpbench", "--scales", "whole number in 1..1e+09", ()),
    ("dpbench", "--domains", "whole number in 2..4096", ()),
    ("dpbench", "--dims", "whole number in 1..2", ()),
]


@pytest.mark.parametrize("bench, option, allowed, valid", OPTIONS, ids=[f"{b} {o}" for b, o, _, _ in OPTIONS])
def test_a_bad_value_is_one_error_line_naming_the_option(bench, option, allowed, valid, capsys, tmp_path):
    for value in BAD:
        if value in valid:
            continue
        out = tmp_path / "never"
        with pytest.raises(SystemExit) as exc:
            main(["bench", bench, option, value, "--out", str(out)])
        assert exc.value.code == 2, (option, value)
        captured = capsys.readouterr()
        err = captured.err
        assert "Traceback" not in err and captured.out == ""
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1 and err.splitlines()[-1] == errors[0], err
        line = errors[0]
        assert line.startswith(f"blowfish bench {bench}: error: argument {option}: ")
        assert f"got {value!r}" in line and allowed in line, line
        assert "_floats" not in line and "invalid" not in line
        assert not out.exists()


def test_a_comma_list_names_the_bad_value_within_it(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "dpbench", "--epsilons", "0.1,-1,1", "--list"])
    assert exc.value.code == 2
    line = capsys.readouterr().err.splitlines()[-1]
    assert "argument --epsilons: each value must be a finite number > 0" in line
    assert "got '-1' in '0.1,-1,1'" in line


def test_an_empty_comma_list_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "dpbench", "--scales", ",", "--list"])
    assert "expected one or more comma-separated values, got ','" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["bench", "dpbench", "--epsilons", "1e-2,0.1", "--scales", "1e3", "--domains", "256", "--seed", "0", "--list"],
    ["bench", "range-queries", "--thetas", "full", "1e1", "--help"],
])
def test_good_values_parse(argv, capsys):
    # "1e3" is a whole number, "full" range-queries' word for |T|; --list / --help end before running
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    assert status in (0, None)
    assert "error" not in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["bench", "range-queries", "--epsilons", "1e-12", "--repetitions", "1"],
                                  ["bench", "kmeans", "--epsilons", "1e-12", "--repetitions", "1"]])
def test_an_epsilon_a_mechanism_refuses_is_one_line_too(argv, capsys, tmp_path):
    # accepted by the option check (a positive number), refused by the mechanisms' plans: no traceback
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith(f"blowfish: error: {argv[1]}: ")
    assert "at most 4294967295" in err


@pytest.mark.parametrize("value", ["1,,2", "1e3,", ",1"])
def test_an_empty_item_in_a_comma_list_is_refused(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "dpbench", "--epsilons", value, "--list"])
    assert exc.value.code == 2 and "none empty" in capsys.readouterr().err
