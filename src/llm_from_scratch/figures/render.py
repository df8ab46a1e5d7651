"""Render a parsed token-embedding trace as one self-contained HTML document: the trace's lexemes
arranged, no number computed (Jinja2 imported on first use, for a quick start)."""

from __future__ import annotations

import functools
import html
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from llm_from_scratch.figures.links import WIDTH as LINKS_WIDTH
from llm_from_scratch.figures.links import lay_out_links
from llm_from_scratch.figures.scatter import marker_path
from llm_from_scratch.figures.trace_parser import Trace
from llm_from_scratch.files import write_output
from llm_from_scratch.labels import Labels, load_labels
from llm_from_scratch.traces.token_embeddings_v1 import NONE, RULE_STATES, SHARINGS, STATES

if TYPE_CHECKING:
    import jinja2

TEMPLATE_NAME: Final = "token_embeddings.html.j2"


@dataclass(frozen=True)
class HtmlFigure:
    """A figure's page that a notebook shows inline (Jupyter and Colab call ``_repr_html_``),
    in a frame of its own so that its style stays inside it; ``str()`` is the page.

    >>> HtmlFigure("<p>E</p>", height=120)._repr_html_()[:40]
    '<iframe srcdoc="&lt;p&gt;E&lt;/p&gt;" st'
    """

    page: str
    height: int = 640

    def _repr_html_(self) -> str:
        source = html.escape(self.page, quote=True)
        style = f"width: 100%; height: {self.height}px; border: 0"
        return f'<iframe srcdoc="{source}" style="{style}"></iframe>'

    def __str__(self) -> str:
        return self.page


def render_figure(trace: Trace, lang: str) -> str:
    """The figure of a parsed trace in ``lang``: inline CSS, no script, no external reference.

    Raises:
        FormatError: ``labels.table``, the language has no table or a label is missing or blank.
    """
    return render_page(
        TEMPLATE_NAME,
        lang,
        load_labels(lang),
        trace=trace,
        states=STATES,
        repeated_sharing=SHARINGS[-1],
        none=NONE,
        links={
            "forward": lay_out_links(trace, to_row=False),
            "reverse": lay_out_links(trace, to_row=True),
        },
        links_width=LINKS_WIDTH,
        rows=list(zip(trace.table_rows, trace.row_gradients, strict=True)),
        reverse_rows=[
            (
                gradient,
                RULE_STATES[gradient.rule],
                list(zip(gradient.flat_positions, gradient.contributions, strict=True)),
            )
            for gradient in trace.row_gradients
        ],
    )


def render_page(template_name: str, lang: str, labels: Labels, **context: object) -> str:
    """A template rendered in ``lang`` with ``labels``, ``context``, ``zip`` and ``marker_path``."""
    template = environment().get_template(template_name)
    return template.render(lang=lang, labels=labels, zip=zip, marker_path=marker_path, **context)


def write_page(page: str, output: str | Path | None) -> None:
    """Write an HTML page a command draws to ``output``
    (:func:`llm_from_scratch.files.write_output`: replaced whole, a device in place), or to
    standard output when ``output`` is None.

    Raises:
        OSError: about ``output``, never its temporary.
    """
    data = page.encode("utf-8")
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        write_output(str(output), data)


def number_text(lexeme: str) -> str:
    """A number of the trace as a figure shows it: a float lexeme without its trailing zeros,
    an integral value as an integer (the text of the lexeme, shortened; nothing is computed).

    >>> number_text("4.000000000000"), number_text("-0.250000000000"), number_text("12")
    ('4', '-0.25', '12')
    """
    whole, point, fraction = lexeme.partition(".")
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if point and fraction else whole


@functools.cache
def environment() -> jinja2.Environment:
    """The figures' Jinja2 environment: the package's templates, autoescaped, strict, with the
    filter ``number`` (:func:`number_text`)."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("llm_from_scratch.figures", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["number"] = number_text
    return environment
