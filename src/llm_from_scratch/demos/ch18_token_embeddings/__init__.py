"""Chapter 18, token embeddings: the demo, its trace, and the report both are made from.

Each is computed from a :class:`Ch18Fixture`, the chapter's :data:`KNOWN_FIXTURE` by default:

>>> fixture = KNOWN_FIXTURE.with_ids(2)
>>> print(render_demo(fixture).splitlines()[1])
ids: shape=none values=2
"""

from llm_from_scratch.demos.ch18_token_embeddings.demo import format_demo
from llm_from_scratch.demos.ch18_token_embeddings.fixture import KNOWN_FIXTURE, Ch18Fixture
from llm_from_scratch.demos.ch18_token_embeddings.report import (
    Ch18Report,
    build_report,
    explicit_one_hot_product,
)
from llm_from_scratch.demos.ch18_token_embeddings.trace import format_trace


def render_demo(fixture: Ch18Fixture = KNOWN_FIXTURE, lang: str = "en") -> str:
    """Run the fixture and return the demo text in ``lang`` (thirteen lines for the known
    fixture; a learner's IDs leave out the chapter's own checks)."""
    return format_demo(build_report(fixture), lang)


def render_trace(fixture: Ch18Fixture = KNOWN_FIXTURE) -> str:
    """Run the fixture and return its trace ``token-embeddings-v1`` (raises as ``format_trace``)."""
    return format_trace(build_report(fixture))


__all__ = [
    "KNOWN_FIXTURE",
    "Ch18Fixture",
    "Ch18Report",
    "build_report",
    "explicit_one_hot_product",
    "format_demo",
    "format_trace",
    "render_demo",
    "render_trace",
]
