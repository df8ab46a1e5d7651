"""docs/errors.md lists exactly the package's exception classes, and each behaves as listed.

The package is walked for exception classes (so a new class missing from the catalogue fails
here). Every class that is not a base class has one public trigger below; the raised error
must be exactly that class, also the listed built-in classes, carry the listed attributes and
read as one of the listed messages. For the classes built on ``StructuredError``, the listed
attributes are the fields in constructor order, and every raised error rebuilds from its fields
(positionally and by keyword) and survives pickling.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import llm_from_scratch
import llm_from_scratch.autograd.ops as ops_module
from llm_from_scratch.autograd import GraphRetention, TensorValue
from llm_from_scratch.autograd.gather import FlatIds
from llm_from_scratch.autograd.leaf_state import restore_node
from llm_from_scratch.errors import StructuredError
from llm_from_scratch.figures.labels import load_labels
from llm_from_scratch.figures.trace_parser import parse_trace
from llm_from_scratch.gradcheck import check_gradient
from llm_from_scratch.nn import (
    Embedding,
    EmbeddingBag,
    FrozenTable,
    NamedParameter,
    NamedParameters,
    SplitMix64,
    functional,
)
from llm_from_scratch.nn.embedding import restore_embedding
from llm_from_scratch.nn.embedding_bag import restore_embedding_bag
from llm_from_scratch.nn.init import validate_parameter_name, xavier_uniform_array
from llm_from_scratch.optim import SGD, Adagrad, Adam, Optimizer, load_state, save_state
from llm_from_scratch.tensor import Tensor, checked_row_major_layout

from checkpoint_support import CHECKPOINT_TRIGGERS
from checks import NumpyWithFailing, PicklePayload, unpickled
from conftest import KNOWN_TABLE
from neighbours_support import NEIGHBOURS_TRIGGERS

CATALOGUE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
SECTION = re.compile(r"^## `(?P<module>llm_from_scratch[\w.]*)`")
OTHER_SECTION = re.compile(r"^## ")
ROW = re.compile(
    r"^\| `(?P<name>\w+)` \| (?P<also>[^|]*) \| (?P<attributes>[^|]*) \| (?P<messages>[^|]*) \|"
    r" (?P<when>[^|]*) \|$"
)
PLACEHOLDER = re.compile(r"\{(?P<name>\*|\w+)(?:!(?P<conversion>[rs]))?(?::(?P<spec>[^}]*))?\}")


@dataclass(frozen=True)
class Entry:
    """One row of the catalogue."""

    name: str
    module: str | None
    also: frozenset[str]
    attributes: tuple[str, ...]
    fields: tuple[str, ...]
    messages: tuple[str, ...]
    is_base: bool


def catalogue() -> dict[str, Entry]:
    entries: dict[str, Entry] = {}
    module: str | None = None
    for line in CATALOGUE.read_text(encoding="utf-8").splitlines():
        if OTHER_SECTION.match(line):
            heading = SECTION.match(line)
            module = heading["module"] if heading else None
        row = ROW.match(line)
        if row is None:
            continue
        assert row["name"] not in entries, f"{row['name']} is listed twice"
        entries[row["name"]] = Entry(
            name=row["name"],
            module=module,
            also=frozenset(re.findall(r"`(\w+)`", row["also"])),
            attributes=tuple(re.findall(r"`(\w+)`", row["attributes"])),
            fields=tuple(re.findall(r"`(\w+)`", row["attributes"].split(";")[0])),
            messages=tuple(re.findall(r"`([^`]+)`", row["messages"])),
            is_base=row["when"].startswith("Never raised itself"),
        )
    return entries


def package_exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(llm_from_scratch.__path__, "llm_from_scratch."):
        if info.name.endswith("__main__"):
            continue  # running it would run the command line
        for value in vars(importlib.import_module(info.name)).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__.startswith("llm_from_scratch")
            ):
                assert found.setdefault(value.__name__, value) is value, value.__name__
    return found


def builtin_kinds(cls: type[BaseException]) -> frozenset[str]:
    """The most specific built-in classes an error also is (``IndexError``, not ``LookupError``)."""
    builtins = [
        base
        for base in cls.__mro__
        if base.__module__ == "builtins" and base not in (Exception, BaseException, object)
    ]
    return frozenset(
        base.__name__
        for base in builtins
        if not any(other is not base and issubclass(other, base) for other in builtins)
    )


def message_pattern(template: str, error: BaseException) -> re.Pattern[str]:
    """The template as a regex: attributes filled in from ``error``, ``{*}`` as any text."""
    parts, last = [], 0
    for placeholder in PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[last : placeholder.start()]))
        last = placeholder.end()
        name = placeholder["name"]
        if name == "*":
            parts.append(".*")
            continue
        if hasattr(error, name):
            value = getattr(error, name)
        elif name == "cause":
            value = error.__cause__
        else:
            raise AssertionError(f"{type(error).__name__} has no attribute {name!r}")
        if isinstance(value, tuple):
            value = list(value)
        if placeholder["conversion"] == "r":
            text = repr(value)
        else:
            text = format(value, placeholder["spec"] or "")
        parts.append(re.escape(text))
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts), re.DOTALL)


# One public trigger per class ----------------------------------------------------------------


def layer() -> Embedding:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    return Embedding.from_parameter(table)


def bag_layer(mode: str = "mean") -> EmbeddingBag:
    return EmbeddingBag.from_parameter(layer().table, mode=mode)


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


def load_state_saved_from(
    saved: Callable[[], Optimizer], loading: Callable[[], Optimizer]
) -> Callable[[], object]:
    """A call that saves ``saved()``'s state to a new temporary folder and loads it into
    ``loading()``."""

    def call() -> object:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "optimizer.safetensors"
            save_state(path, saved())
            return load_state(path, loading())

    return call


def parameter(shape: tuple[int, ...], dtype: type = np.float64) -> TensorValue:
    count = int(np.prod(shape, dtype=np.int64))
    return TensorValue.parameter(Tensor(shape, np.arange(count, dtype=float), dtype=dtype))


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


TRIGGERS: dict[str, Callable[[], object]] = {
    # llm_from_scratch.tensor
    "ShapeTypeError": lambda: checked_row_major_layout(7),
    "NonIntegerExtentError": lambda: checked_row_major_layout((2, 1.5)),
    "NegativeExtentError": lambda: checked_row_major_layout((2, -1)),
    "ShapeOverflowError": lambda: checked_row_major_layout((2**32, 2**32)),
    "TooManyAxesError": lambda: checked_row_major_layout((1,) * 65),
    "DataLengthMismatchError": lambda: Tensor((2, 2), [1.0, 2.0, 3.0]),
    "TensorValueTypeError": lambda: Tensor((2,), [1.0, None]),  # type: ignore[list-item]
    "TensorValueOverflowError": lambda: Tensor((1,), [1e300], dtype=np.float32),
    "TensorAllocationError": lambda: Tensor.zeros((2**31, 2**31)),
    # llm_from_scratch.autograd
    "OperandTypeError": lambda: parameter((2,)).add(3),  # type: ignore[arg-type]
    "OperandShapeMismatchError": lambda: parameter((2,)).add(parameter((3,))),
    "OperandDtypeMismatchError": lambda: parameter((2,)).mul(parameter((2,), np.float32)),
    "InvalidShapeError": lambda: parameter((2,)).reshape((-2,)),
    "ReshapeCountMismatchError": lambda: parameter((2, 3)).reshape((5,)),
    "GatherTableRankError": lambda: parameter((4,)).gather_rows([0], (1,)),
    "IndexContainerError": lambda: parameter((4, 2)).gather_rows(5, ()),
    "GatherIndexCountError": lambda: parameter((4, 2)).gather_rows([0, 1], (3,)),
    "GatherIndexTypeError": lambda: parameter((4, 2)).gather_rows([0, 1.5], (2,)),
    "GatherIndexDtypeError": lambda: parameter((4, 2)).gather_rows(np.array([], float), (0,)),
    "GatherIndexOutOfBoundsError": lambda: parameter((4, 2)).gather_rows([0, 4], (2,)),
    "OutputAllocationError": add_without_memory,
    "ReleasedOperandError": lambda: released_output().sum(),
    "SeedTypeError": lambda: layer()([1]).backward_with_seed([[1.0, 1.0]]),  # type: ignore[arg-type]
    "SeedShapeMismatchError": lambda: layer()([1]).backward_with_seed(np.ones((2, 1))),
    "NonFiniteSeedError": lambda: layer()([1]).backward_with_seed(np.array([[1.0, np.nan]])),
    "RetentionTypeError": lambda: layer()([1]).backward_with_seed(np.ones((1, 2)), "release"),  # type: ignore[arg-type]
    "NotScalarOutputError": lambda: layer()([1, 2]).backward(),
    "NotRecordedError": lambda: TensorValue.constant(Tensor((), [1.0])).backward(),
    "GraphReleasedError": lambda: released_output().backward_with_seed(np.ones((1, 3, 2))),
    "StaleValueError": lambda: stale_output().backward_with_seed(np.ones((1, 3, 2))),
    "NonFiniteGradientError": lambda: layer()([0, 0]).backward_with_seed(np.full((2, 2), 1.7e308)),
    "NotAParameterError": lambda: TensorValue.constant(Tensor((1,), [1.0])).zero_grad(),
    "NonFiniteParameterError": lambda: TensorValue.parameter(Tensor((2,), [1.0, np.nan])),
    "UnpicklableOperationError": lambda: pickle.dumps(layer()([1])),
    "LeafStateError": lambda: unpickled(PicklePayload(restore_node, {"kind": "operation"})),
    # llm_from_scratch.autograd.gather (internal)
    "IdContainerError": lambda: FlatIds(5),
    # llm_from_scratch.nn.init
    "ParameterNameTypeError": lambda: validate_parameter_name(5),
    "EmptyParameterNameError": lambda: validate_parameter_name(""),
    "EmptyNameSegmentError": lambda: validate_parameter_name("token..weight"),
    "InvalidNameByteError": lambda: validate_parameter_name("Token"),
    "FanValueError": lambda: xavier_uniform_array(-1, 2, SplitMix64.from_seed(0)),
    "ZeroFanInError": lambda: xavier_uniform_array(0, 2, SplitMix64.from_seed(0)),
    "ZeroFanOutError": lambda: xavier_uniform_array(2, 0, SplitMix64.from_seed(0)),
    "GeneratorTypeError": lambda: xavier_uniform_array(2, 2, None),  # type: ignore[arg-type]
    "ParameterTableError": lambda: NamedParameter.xavier_uniform(
        "w", 2**31, 2**31, SplitMix64.from_seed(0)
    ),
    "SeedRangeError": lambda: SplitMix64.from_seed(-1),
    "NotAParameterLeafError": lambda: NamedParameter.from_value(
        "w", TensorValue.constant(Tensor((1,), [1.0]))
    ),
    "ParameterCollectionTypeError": lambda: NamedParameters(None),  # type: ignore[arg-type]
    "NotANamedParameterError": lambda: NamedParameters([layer().table.tensor]),  # type: ignore[list-item]
    "DuplicateParameterNameError": lambda: NamedParameters([layer().table, layer().table]),
    "UnknownParameterError": lambda: layer().parameters()["w"],
    # llm_from_scratch.nn
    "EmbeddingInitializationError": lambda: Embedding.new("Token", 4, 2, SplitMix64.from_seed(0)),
    "TableRankError": lambda: Embedding.from_parameter(
        NamedParameter.from_tensor("w", Tensor((2,), [1.0, 2.0]))
    ),
    "EmptyVocabularyError": lambda: Embedding.new("w", 0, 2, SplitMix64.from_seed(0)),
    "ZeroEmbeddingWidthError": lambda: Embedding.new("w", 4, 0, SplitMix64.from_seed(0)),
    "TokenShapeError": lambda: layer().forward([1], (1.0,)),  # type: ignore[arg-type]
    "TokenIdContainerError": lambda: layer()([[1, 2], [3]]),
    "TokenIdNestingError": lambda: layer()(self_containing_list()),
    "TokenCountMismatchError": lambda: layer().forward([1, 2, 3], (2, 2)),
    "TokenIdTypeError": lambda: layer()([0, True]),
    "TokenIdDtypeError": lambda: layer().forward(np.array([], dtype=float), (0,)),
    "TokenIdOutOfBoundsError": lambda: layer()([1, 4, 9]),
    "IndexAllocationError": lambda: layer().forward(range(2**61), (2**30, 2**31)),
    "TableTypeError": lambda: functional.embedding([0], np.zeros((2, 2))),  # type: ignore[arg-type]
    "PretrainedTableTypeError": lambda: Embedding.from_pretrained([[1.0, 2.0]]),
    "FrozenTableMaxNormError": lambda: Embedding.from_pretrained(np.ones((2, 2)), max_norm=1.0),
    "OptionValueError": lambda: Embedding.from_parameter(layer().table, padding_idx=4),
    "OptionValueError": lambda: Embedding.from_parameter(layer().table, max_norm=0.0),
    "OptionValueError": lambda: Embedding.from_parameter(layer().table, norm_type=float("nan")),
    "OptionTypeError": lambda: Embedding.from_parameter(layer().table, scale_grad_by_freq=1),  # type: ignore[arg-type]
    "OptionValueError": lambda: bag_layer("min"),
    "BagLayoutError": lambda: bag_layer()([0, 1]),
    "OffsetsContainerError": lambda: bag_layer()([0, 1], np.zeros((1, 1), dtype=int)),
    "EmptyOffsetsError": lambda: bag_layer()([0, 1], []),
    "OffsetTypeError": lambda: bag_layer()([0, 1], [0, 1.5]),
    "OffsetOutOfRangeError": lambda: bag_layer()([0, 1], [0, 3]),
    "FirstOffsetError": lambda: bag_layer()([0, 1], [1]),
    "DecreasingOffsetsError": lambda: bag_layer()([0, 1, 2], [0, 2, 1]),
    "LastOffsetError": lambda: bag_layer()([0, 1], [0, 1], include_last_offset=True),
    "PerSampleWeightsModeError": lambda: bag_layer()([[0, 1]], per_sample_weights=np.ones((1, 2))),
    "PerSampleWeightsTypeError": lambda: bag_layer("sum")([[0, 1]], per_sample_weights=[1.0, 1.0]),  # type: ignore[arg-type]
    "PerSampleWeightsShapeError": lambda: bag_layer("sum")([[0, 1]], per_sample_weights=np.ones(2)),
    "EmbeddingStateError": lambda: unpickled(
        PicklePayload(restore_embedding, {"table": layer().table})
    ),
    "EmbeddingBagStateError": lambda: unpickled(
        PicklePayload(restore_embedding_bag, {"table": layer().table})
    ),
    # llm_from_scratch.nn.checkpoint: one failing call per class, in tests/checkpoint_support.py
    **CHECKPOINT_TRIGGERS,
    # the chapter 18 learner's commands: one failing call per class, in tests/neighbours_support.py
    **NEIGHBOURS_TRIGGERS,
    # the other modules
    # llm_from_scratch.optim
    "HyperparameterTypeError": lambda: Adam(layer().parameters(), learning_rate=True),
    "HyperparameterValueError": lambda: SGD(layer().parameters(), learning_rate=0.0),
    "ParameterListError": lambda: SGD(layer().table, 0.1),  # type: ignore[arg-type]
    "ParameterEntryError": lambda: Adagrad([5], 0.1),  # type: ignore[list-item]
    "DuplicateParameterError": lambda: Adam([*layer().parameters()] * 2, 0.1),
    "OutputTypeError": lambda: SGD(layer().parameters(), 0.1).backward_step(5),  # type: ignore[arg-type]
    "NonFiniteStepError": lambda: overflowing_sgd().step(),
    "StateMappingError": lambda: Adam(layer().parameters(), 0.1).load_state_dict([]),  # type: ignore[arg-type]
    "StateError": lambda: SGD([], 0.1).load_state_dict({"step": np.zeros(2, np.int64)}),
    "NotAnOptimizerError": lambda: save_state("optimizer.safetensors", None),  # type: ignore[arg-type]
    "StateFileError": load_state_saved_from(
        lambda: Adam(layer().parameters(), 0.1), lambda: Adagrad(layer().parameters(), 0.1)
    ),
    "GradientCheckError": lambda: check_gradient(lambda p: p, parameter((2,))),
    "LabelError": lambda: load_labels("xx"),
    "TraceFormatError": lambda: parse_trace(""),
}


def test_the_catalogue_lists_every_exception_class_of_the_package_and_nothing_else() -> None:
    documented, defined = catalogue(), package_exception_classes()
    assert sorted(set(defined) - set(documented)) == [], "classes missing from docs/errors.md"
    assert sorted(set(documented) - set(defined)) == [], "docs/errors.md lists unknown classes"


@pytest.mark.parametrize("entry", catalogue().values(), ids=lambda entry: entry.name)
def test_each_class_is_importable_from_its_section_and_is_the_listed_builtin_kinds(
    entry: Entry,
) -> None:
    cls = package_exception_classes()[entry.name]
    if entry.module is not None:
        assert getattr(importlib.import_module(entry.module), entry.name) is cls
    else:  # "Other modules": the row names the module in its text
        assert cls.__module__.startswith("llm_from_scratch")
    assert builtin_kinds(cls) == entry.also


def test_base_classes_are_never_triggered_and_every_other_class_is() -> None:
    entries = catalogue()
    bases = {name for name, entry in entries.items() if entry.is_base}
    assert bases.isdisjoint(TRIGGERS)
    assert set(TRIGGERS) | bases == set(entries)
    defined = package_exception_classes()
    for base in bases:
        assert any(
            issubclass(defined[name], defined[base]) and name != base for name in TRIGGERS
        ), f"{base} is documented as a base class but nothing triggered derives from it"


@pytest.mark.parametrize("name", TRIGGERS, ids=str)
def test_each_class_is_raised_with_its_listed_attributes_and_message(name: str) -> None:
    entry = catalogue()[name]
    with pytest.raises(Exception) as caught:
        TRIGGERS[name]()
    error = caught.value
    assert type(error) is package_exception_classes()[name]
    for attribute in entry.attributes:
        assert hasattr(error, attribute), f"{name} has no attribute {attribute!r}"
    assert entry.messages, f"{name} lists no message"
    message = str(error)
    assert any(
        message_pattern(template, error).fullmatch(message) for template in entry.messages
    ), f"{message!r} matches none of {entry.messages}"


STRUCTURED_TRIGGERS = [
    name for name in TRIGGERS if issubclass(package_exception_classes()[name], StructuredError)
]


@pytest.mark.parametrize("entry", catalogue().values(), ids=lambda entry: entry.name)
def test_each_structured_class_lists_its_fields_in_constructor_order(entry: Entry) -> None:
    cls = package_exception_classes()[entry.name]
    if issubclass(cls, StructuredError):
        assert entry.fields == cls.field_names


@pytest.mark.parametrize("name", STRUCTURED_TRIGGERS, ids=str)
def test_each_raised_error_rebuilds_from_its_fields_and_survives_pickling(name: str) -> None:
    with pytest.raises(StructuredError) as caught:
        TRIGGERS[name]()
    error = caught.value
    fields = {field: getattr(error, field) for field in error.field_names}
    positional, by_keyword = type(error)(*fields.values()), type(error)(**fields)
    restored = pickle.loads(pickle.dumps(error))
    for copy in (positional, by_keyword, restored):
        assert type(copy) is type(error)
        assert copy.args == error.args == (str(error),)
        assert repr([getattr(copy, field) for field in fields]) == repr([*fields.values()])
    if "cause" in fields:
        assert error.cause is error.__cause__


def test_the_internal_id_container_error_never_escapes_a_public_boundary() -> None:
    from llm_from_scratch.autograd import IndexContainerError
    from llm_from_scratch.nn import TokenIdContainerError

    for call, public in (
        (lambda: parameter((4, 2)).gather_rows(5, ()), IndexContainerError),
        (lambda: layer().forward(5, ()), TokenIdContainerError),  # type: ignore[arg-type]
    ):
        with pytest.raises(public) as caught:
            call()
        assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_every_class_named_in_the_precedence_lists_is_catalogued() -> None:
    text = CATALOGUE.read_text(encoding="utf-8")
    precedence = text.split("## Precedence", 1)[1].split("\n## ", 1)[0]
    builtins = {"TypeError", "MemoryError", "ValueError"}
    named = set(re.findall(r"`(\w+Error)`", precedence)) - builtins
    assert named and named <= set(catalogue())


BUILTIN_TRIGGERS: list[tuple[type[BaseException], Callable[[], object]]] = [
    (AttributeError, lambda: setattr(Tensor((1,), [1.0]), "shape", (2,))),
    (AttributeError, lambda: setattr(layer(), "_table", None)),
    (TypeError, TensorValue),
    (TypeError, Embedding),
    (TypeError, EmbeddingBag),
    (TypeError, lambda: FrozenTable("w", layer().table.tensor)),
    (TypeError, NamedParameter),
    (TypeError, lambda: Embedding.from_parameter(parameter((4, 2)))),  # type: ignore[arg-type]
    (ValueError, lambda: layer().table.tensor.numpy().__setitem__(0, 1.0)),
]


@pytest.mark.parametrize(("error", "call"), BUILTIN_TRIGGERS)
def test_the_documented_builtin_errors_are_raised(
    error: type[BaseException], call: Callable[[], object]
) -> None:
    with pytest.raises(error):
        call()
    assert f"`{error.__name__}`" in CATALOGUE.read_text(encoding="utf-8")
