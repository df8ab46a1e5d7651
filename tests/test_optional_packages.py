"""``import_optional``: an optional package that is missing skips a test outside CI, and fails
it under CI when CI installs that package's extra."""

from __future__ import annotations

import sys

import pytest

import conftest
from conftest import import_optional

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


def test_ci_installs_the_test_extra_and_torch_is_in_it() -> None:
    assert {"test"} == conftest.CI_EXTRAS
    assert "test" in conftest.extras_listing("torch")


def test_a_package_that_is_there_is_imported_and_one_no_extra_lists_is_refused() -> None:
    assert import_optional("hypothesis.strategies") is sys.modules["hypothesis.strategies"]
    with pytest.raises(FAILS, match="numpy is not an optional dependency"):
        import_optional("numpy")
