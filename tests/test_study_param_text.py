"""One parser of study parameters written as text (engine.studies.param_text), used by the
command line and the Studies tab; the command line's choice lists agree with the libraries'."""
from __future__ import annotations

import pytest

from engine.studies.param_text import (parse_key_values, parse_param_items,
                                       parse_variant_items, split_items, study_params)
from engine.studies.spec import StudyError


def test_params_are_typed_as_config_fields_and_text_params_stay_text():
    p = study_params(["tRCD=10, 12,14", "configs=DDR4-3200,HBM2"],
                     ["fast:tRCD=10,tRP=10", "slow:tRCD=20"])
    assert p["tRCD"] == [10, 12, 14] and all(isinstance(v, int) for v in p["tRCD"])
    assert p["configs"] == ["DDR4-3200", "HBM2"]
    assert p["variants"] == {"fast": {"tRCD": 10, "tRP": 10}, "slow": {"tRCD": 20}}


@pytest.mark.parametrize("fn, item, what, expect", [
    (parse_param_items, "tRCD", "--param", "--param 'tRCD': expected NAME=V1,V2"),
    (parse_param_items, "=1,2", "--param", "expected NAME=V1,V2"),
    (parse_variant_items, "fast", "--variant", "--variant 'fast': expected NAME:KEY=VALUE"),
    (parse_variant_items, "fast:tRCD", "variant", "variant 'fast:tRCD': 'tRCD' is not KEY=VALUE"),
    (parse_variant_items, "fast:", "variant", "no KEY=VALUE given"),
])
def test_bad_items_name_the_item_and_what_was_expected(fn, item, what, expect):
    with pytest.raises(StudyError, match=expect.replace("(", r"\(")):
        fn([item], what)


def test_key_values_typed_or_numbers_else_text():
    assert parse_key_values(["tRCD=12"], "--set", typed=True) == {"tRCD": 12}
    assert parse_key_values(["peak_tflops=90", "name=a100"], "--compute", typed=False) == {
        "peak_tflops": 90.0, "name": "a100"}
    with pytest.raises(StudyError, match="--set 'x': expected KEY=VALUE"):
        parse_key_values(["x"], "--set", typed=True)
    assert split_items(" a; ;b ", ";") == ["a", "b"]


def test_cli_and_gui_choice_lists_are_the_libraries_lists():
    """The choice lists are declared once (engine.policies, optimizer.method_names, both free of
    torch so --help stays fast): main.py, the GUI and the method registry use those objects."""
    import main
    from engine.policies import PAGE_POLICIES, SCHEDULERS
    from gui.views import optimizer as optimizer_view
    from optimizer import methods
    from optimizer.method_names import ALL_METHODS
    assert main.SCHEDULER_CHOICES is SCHEDULERS
    assert main.PAGE_POLICY_CHOICES is PAGE_POLICIES
    assert main.METHOD_CHOICES is ALL_METHODS
    assert optimizer_view.METHODS is ALL_METHODS
    assert methods.ALL_METHODS is ALL_METHODS
    assert set(methods.METHODS) == set(ALL_METHODS)
