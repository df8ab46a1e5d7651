"""Word vectors after training: queries, evaluations and files, with gensim 4's names.

:class:`WordVectors` holds words and their vectors, as gensim's ``KeyedVectors`` does, and
answers as it does (``docs/vectors.md``).
"""

from llm_from_scratch.vectors.keyed import WordVectors

__all__ = ["WordVectors"]
