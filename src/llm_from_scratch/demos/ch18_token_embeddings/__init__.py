"""Chapter 18, token embeddings: the demo, its trace, and the report both are made from."""

from llm_from_scratch.demos.ch18_token_embeddings.demo import format_demo
from llm_from_scratch.demos.ch18_token_embeddings.one_hot import explicit_one_hot_product
from llm_from_scratch.demos.ch18_token_embeddings.report import Ch18Report, build_report
from llm_from_scratch.demos.ch18_token_embeddings.trace import TRACE_VERSION, format_trace


def render_demo() -> str:
    """Run the fixture and return the demo's thirteen lines."""
    return format_demo(build_report())


def render_trace() -> str:
    """Run the fixture and return the fifteen-line trace ``token-embeddings-v1``."""
    return format_trace(build_report())


__all__ = [
    "TRACE_VERSION",
    "Ch18Report",
    "build_report",
    "explicit_one_hot_product",
    "format_demo",
    "format_trace",
    "render_demo",
    "render_trace",
]
