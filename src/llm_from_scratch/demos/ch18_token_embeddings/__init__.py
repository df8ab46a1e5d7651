"""Chapter 18, token embeddings: the demo, its trace, and the report both are made from.

Each is computed from a :class:`Ch18Fixture`, the chapter's :data:`KNOWN_FIXTURE` by default:

>>> fixture = KNOWN_FIXTURE.with_ids(2)
>>> print(render_demo(fixture).splitlines()[1])
ids: shape=none values=2
"""

from typing import Final

from llm_from_scratch.autograd import EmbeddingError, TensorAutodiffError
from llm_from_scratch.demos.ch18_token_embeddings.demo import format_demo
from llm_from_scratch.demos.ch18_token_embeddings.fixture import KNOWN_FIXTURE, Ch18Fixture
from llm_from_scratch.demos.ch18_token_embeddings.one_hot import explicit_one_hot_product
from llm_from_scratch.demos.ch18_token_embeddings.report import Ch18Report, build_report
from llm_from_scratch.demos.ch18_token_embeddings.trace import TRACE_VERSION, format_trace
from llm_from_scratch.tensor import TensorError
from llm_from_scratch.traces import TraceFormatError

#: What a learner's IDs or upstream can raise through :meth:`Ch18Fixture.with_ids`,
#: :func:`render_demo` and :func:`render_trace`: the layer's, the tensor's and the tape's typed
#: errors, and the trace's when v1 cannot express the run.
INPUT_ERRORS: Final = (EmbeddingError, TensorError, TensorAutodiffError, TraceFormatError)


def render_demo(fixture: Ch18Fixture = KNOWN_FIXTURE) -> str:
    """Run the fixture and return the demo text (thirteen lines for the known fixture)."""
    return format_demo(build_report(fixture))


def render_trace(fixture: Ch18Fixture = KNOWN_FIXTURE) -> str:
    """Run the fixture and return its trace ``token-embeddings-v1``.

    Raises:
        TraceFormatError: when more than one ID repeats, which v1 cannot express.
    """
    return format_trace(build_report(fixture))


__all__ = [
    "INPUT_ERRORS",
    "KNOWN_FIXTURE",
    "TRACE_VERSION",
    "Ch18Fixture",
    "Ch18Report",
    "build_report",
    "explicit_one_hot_product",
    "format_demo",
    "format_trace",
    "render_demo",
    "render_trace",
]
