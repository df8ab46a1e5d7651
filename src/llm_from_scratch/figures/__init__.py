"""Static, accessible figures drawn from the chapters' machine-readable traces.

:mod:`llm_from_scratch.figures.token_embeddings` draws the chapter 18 trace
``token-embeddings-v1``; :mod:`llm_from_scratch.figures.cli` is its command
``llm-from-scratch ch18 figure``. Nothing heavy is imported here.
"""
