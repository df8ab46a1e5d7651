"""``import_optional``: an optional package that is missing skips a test outside CI, and fails
it under CI when CI installs an extra that lists it (torch is in the ``test`` extra, which
``make test`` installs, and in the ``torch`` extra)."""

from __future__ import annotations

import sys

import pytest

from conftest import import_optional

SKIPS, FAILS = pytest.skip.Exception, pytest.fail.Exception


@pytest.mark.parametrize(
    ("ci", "extras", "outcome"),
    [
        (None, "test", SKIPS),
        (None, "test,torch", SKIPS),
        ("true", "other", SKIPS),
        ("true", "test", FAILS),
        ("true", "torch", FAILS),
    ],
)
def test_a_missing_package_skips_unless_ci_installs_its_extra(
    monkeypatch: pytest.MonkeyPatch, ci: str | None, extras: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("TEST_EXTRAS", extras)
    with pytest.raises(outcome) as caught:
        import_optional("torch")
    if outcome is SKIPS:
        assert caught.value.msg == "torch is not installed: pip install -e '.[test]'"  # type: ignore[attr-defined]


def test_a_package_that_is_there_is_imported_and_one_no_extra_lists_is_refused() -> None:
    assert import_optional("hypothesis.strategies") is sys.modules["hypothesis.strategies"]
    with pytest.raises(FAILS, match="numpy is not an optional dependency"):
        import_optional("numpy")
