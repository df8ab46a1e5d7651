"""A deep copy or a pickle of a parameter taken while another thread steps it holds the values
of one revision, never a mix, and the original's gradient as one backward pass left it."""

from __future__ import annotations

import copy
import pickle
import threading

import numpy as np

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

SIZE = 1 << 17  # large enough that one step's write takes a while


def test_copies_taken_during_steps_each_hold_one_revision() -> None:
    leaf = TensorValue.parameter(Tensor.zeros((SIZE,)))
    leaf.sum().backward()  # a dense gradient of ones: each step subtracts one everywhere
    optimizer = SGD([leaf], learning_rate=1.0)
    done = threading.Event()

    def step() -> None:
        while not done.is_set():
            optimizer.step()

    stepper = threading.Thread(target=step)
    stepper.start()
    try:
        copies = [
            copy.deepcopy(leaf) if turn % 2 else pickle.loads(pickle.dumps(leaf))
            for turn in range(60)
        ]
    finally:
        done.set()
        stepper.join()
    assert leaf.value_revision > 0
    for twin in copies:
        values = twin.numpy()
        assert np.all(values == values[0]), "a copy mixes two revisions"
        assert twin.value_revision == 0
        assert np.all(twin.gradient.numpy() == 1.0)  # type: ignore[union-attr]
