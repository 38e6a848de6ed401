"""`assignor_bench --quick`, as `make test` runs it: a check with a limit, not a printout."""

from __future__ import annotations

import pytest

from tests.bench import assignor_bench


def test_a_round_over_the_limit_is_named_with_its_shape_and_time() -> None:
    assert assignor_bench.over_limit(10, 1000, (0.5, 1.25, 1.0), 1.0) == [
        "cooperative first round of 10 workers x 1000 tasks: 1.250 s, over the 1 s limit "
        "(median of 3 runs)"
    ]


def test_the_quick_run_passes_under_its_limit_and_fails_over_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assignor_bench.main(["--quick"])
    assert "too slow" not in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        assignor_bench.main(["--quick", "--limit-s", "0.000001"])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "assignor_bench: too slow:" in err
    assert "of 1000 workers x 10000 tasks" in err
