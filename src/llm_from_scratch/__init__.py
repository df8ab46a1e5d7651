"""llm-from-scratch: the course's language model, built one chapter at a time.

Subpackages, one per concept:

- :mod:`llm_from_scratch.tensor`: float tensors with checked row-major layouts (chapter 8).
- :mod:`llm_from_scratch.autograd`: the tape, its operations and the row gather (chapters 15-16).
- :mod:`llm_from_scratch.nn`: parameter initialization (chapter 17) and the token
  :class:`~llm_from_scratch.nn.embedding.Embedding` layer (chapter 18).
- :mod:`llm_from_scratch.gradcheck`: the central-difference gradient probe.
"""

__version__ = "0.1.0"
