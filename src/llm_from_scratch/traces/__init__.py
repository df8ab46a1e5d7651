"""The grammars of the chapters' machine-readable traces, one module each
(:mod:`~llm_from_scratch.traces.token_embeddings_v1`), shared by the demo that writes a trace
and the figure that reads it."""
