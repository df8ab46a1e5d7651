"""Static, accessible HTML figures drawn from a trace or a report, never from the layers.

:func:`~llm_from_scratch.figures.trace_parser.parse_trace` reads the chapter 18 trace
``token-embeddings-v1`` and :func:`~llm_from_scratch.figures.render.render_figure` draws it
(:mod:`llm_from_scratch.figures.cli` is ``llm-from-scratch ch18 figure``);
:mod:`~llm_from_scratch.figures.neighbours` and :mod:`~llm_from_scratch.figures.train` draw the
pages of ``ch18 neighbours`` and ``ch18 train``. Every word comes from
:mod:`llm_from_scratch.labels`. Nothing heavy is imported here.
"""
