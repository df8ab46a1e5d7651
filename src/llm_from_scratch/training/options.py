"""The options of a training run, declared once: each field of :class:`TrainOptions` carries
its help, default and range, from which the command line, the checks and the report are built."""

from __future__ import annotations

import dataclasses
import math
import operator
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from llm_from_scratch.errors import OptionError
from llm_from_scratch.files import os_path, temporary_path

TABLE_FILE: Final = "table.safetensors"
TOKENIZER_FILE: Final = "tokenizer.json"
CHECKPOINT_FILE: Final = "checkpoint.safetensors"
RATES: Final = (0.025, 0.0001)
"""SGD's learning rate at the first and the last word of a run (word2vec's ``alpha`` and
``min_alpha``)."""
MEMORY_BUDGET_VARIABLE: Final = "LLM_FROM_SCRATCH_MEMORY_BUDGET"
"""The memory budget (MB) when ``--memory-budget`` is not given."""
RUNTIME_BYTES: Final = 1 << 30
"""What the interpreter, Numba and LLVM take of an address-space limit before any table."""
BYTES_PER_VALUE: Final = 32
"""The memory a run plans per value of its ``[V, d]`` table: the two tables, the random model a
report measures and the measures' copies (24 measured, ``docs/performance.md``)."""
METHODS: Final = ("hogbatch", "pairs")
"""The training methods (``--method``), the default first."""
RUNTIME_MB: Final = 256
"""The memory a run plans besides its tables (about 190 MB measured)."""


@dataclass(frozen=True)
class OptionSpec:
    """One option's help, and the range of a number (``maximum`` None: the type's bound)."""

    help: str
    minimum: int | float | None = None
    maximum: int | float | None = None
    metavar: str = "N"
    choices: tuple[str, ...] = ()

    def requirement(self, kind: type) -> str:
        """The range in words: ``an integer from 1 to 10000``, or ``one of pairs, hogbatch``."""
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        noun = "an integer" if kind is int else "a number"
        if self.maximum is None:
            return f"{noun} of at least {self.minimum}"
        return f"{noun} from {self.minimum} to {self.maximum}"


def _option(default: Any, text: str, minimum: float | None = None, **spec: Any) -> Any:
    """A field of :class:`TrainOptions`: its default, and its :class:`OptionSpec`."""
    return field(default=default, metadata={"spec": OptionSpec(text, minimum, **spec)})


@dataclass(frozen=True)
class TrainOptions:
    """What a training run is asked to do (see :meth:`checked`)."""

    # _option returns a dataclasses.field, so no default is shared (RUF009 cannot see it)
    corpus: Path | None = _option(None, "a text file or a folder of .txt files", metavar="PATH")  # noqa: RUF009
    output: Path = _option(  # noqa: RUF009
        Path("ch18-train"),
        "the folder of table.safetensors and tokenizer.json, and of the run's checkpoint",
        metavar="DIR",
    )
    dim: int = _option(100, "the width d of the table's rows", 1, maximum=10_000)
    window: int = _option(
        5, "the largest distance between a word and a context word", 1, maximum=1000
    )
    negatives: int = _option(5, "noise words per (word, context) pair", 1, maximum=1000)
    epochs: int = _option(
        5, "passes over the corpus; 0 writes the initial (random) table", 0, maximum=10_000
    )
    min_count: int = _option(
        5, "a word seen fewer times is left out of the vocabulary", 1, maximum=2**63 - 1
    )
    seed: int = _option(
        1, "the seed of the initial table and of every sample", 0, maximum=2**64 - 1
    )
    threads: int | None = _option(None, "training threads, at most one per processor", 1)
    checkpoint_minutes: float = _option(
        10,
        "minutes between checkpoints during an epoch (one is also written after each epoch); 0 "
        "writes them only after epochs",
        0,
        maximum=10_000,
        metavar="M",
    )
    memory_budget: int | None = _option(
        None,
        "the most memory the run may plan to use, in MB (default: the environment's "
        "LLM_FROM_SCRATCH_MEMORY_BUDGET, else half of this machine's memory, less under an "
        "address-space limit); a run whose tables would need more is refused before training",
        1,
        maximum=2**40,
        metavar="MB",
    )
    method: str = _option(
        "hogbatch",
        "how a window is trained: hogbatch, the window's words against one set of negatives as "
        "small matrix products, each row written once per window (Ji et al., 2016); pairs, "
        "word2vec's step after every (word, context) pair with negatives of its own",
        choices=METHODS,
        metavar="NAME",
    )
    reference: bool = _option(
        False,
        "train with the tape's operations and the SGD optimizer, one pair at a time, instead of "
        "the compiled loop: the same samples and steps, much slower, for a small corpus",
    )

    def checked(self, thread_limit: int) -> TrainOptions:
        """The same options if every one is in range, in the order of the fields, with
        ``threads`` (None: ``thread_limit``) and ``memory_budget`` (None: the default) set.

        Raises:
            OptionError: ``train.option``, the first option out of range.
        """
        if self.corpus is None:
            raise _refused("corpus", "a text file or a folder of .txt files", "nothing")
        staged = temporary_path(str(self.output / TABLE_FILE))  # the longest name written
        for name, path, checked in (
            ("corpus", self.corpus, str(self.corpus)),
            ("output", self.output, staged),
        ):
            try:
                os_path(checked)
            except OSError as error:
                shown = f"{str(path)!r} ({error.strerror})"
                raise _refused(name, "a path the system can take", shown) from error
        threads = thread_limit if self.threads is None else self.threads
        budget = default_memory_budget() if self.memory_budget is None else self.memory_budget
        checked_options = replace(self, threads=threads, memory_budget=budget)
        for name, spec, kind in option_fields():
            if spec.choices and getattr(checked_options, name) not in spec.choices:
                shown = repr(getattr(checked_options, name))
                raise _refused(flag(name), spec.requirement(kind), shown)
            if spec.minimum is not None:
                bounded = replace(spec, maximum=thread_limit) if name == "threads" else spec
                _check_number(name, getattr(checked_options, name), bounded, kind)
        _check_output(self.output)
        return checked_options

    def check_memory(self, vocabulary_size: int) -> None:
        """Refuse a run whose ``[vocabulary_size, dim]`` tables would not fit the memory budget
        (:data:`BYTES_PER_VALUE` a value and :data:`RUNTIME_MB`).

        Raises:
            OptionError: ``train.option``, ``--memory-budget`` below what the run needs.
        """
        needed = RUNTIME_MB + -(-vocabulary_size * self.dim * BYTES_PER_VALUE // 2**20)
        if self.memory_budget is not None and needed > self.memory_budget:
            requirement = (
                f"at least {needed} MB for a {vocabulary_size}x{self.dim} table (lower --dim or "
                f"raise --min-count, or raise the budget)"
            )
            raise _refused("memory-budget", requirement, f"{self.memory_budget} MB")

    def differences(self, other: TrainOptions, names: tuple[str, ...]) -> list[str]:
        """``--window 5, not 4`` for each of ``names`` whose value differs in ``other``."""
        return [
            f"--{flag(name)} {getattr(self, name)}, not {getattr(other, name)}"
            for name in names
            if getattr(self, name) != getattr(other, name)
        ]


def default_memory_budget() -> int:
    """The memory budget in MB when none is given: :data:`MEMORY_BUDGET_VARIABLE`, else half of
    the machine's memory or ``ulimit -v`` less :data:`RUNTIME_BYTES`, whichever is less.

    Raises:
        OptionError: ``train.option``, the variable is not an integer of at least 1.
    """
    given = os.environ.get(MEMORY_BUDGET_VARIABLE)
    if given is not None:
        if not given.strip().isdigit() or int(given) < 1:
            requirement = f"an integer of at least 1 (from {MEMORY_BUDGET_VARIABLE})"
            raise _refused("memory-budget", requirement, repr(given))
        return int(given)
    budget = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit != resource.RLIM_INFINITY:
            budget = min(budget, limit - RUNTIME_BYTES)
    except (ImportError, ValueError, OSError):  # pragma: no cover - not POSIX
        pass
    return max(budget >> 20, 1)


def _check_output(folder: Path) -> None:
    """``folder`` is a folder, or can be made one (no file stands where it or a folder above it
    should be), and none of the names the run writes in it is taken by a folder."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        shown = (
            f"the file {folder}" if existing == folder else f"{folder}, below the file {existing}"
        )
        raise _refused("output", "a folder", shown)
    for name in (TABLE_FILE, TOKENIZER_FILE, CHECKPOINT_FILE):
        target = folder / name
        if target.exists() and not target.is_file():
            shown = f"{target}, which is a folder"
            raise _refused("output", f"a folder where {name} can be written", shown)


def option_fields() -> list[tuple[str, OptionSpec, type]]:
    """Each option's name, spec and type (``int``, ``float``, ``bool``, ``str`` or ``Path``), in
    order."""
    kinds = {"Path": Path, "int": int, "float": float, "bool": bool, "str": str}
    return [
        (item.name, item.metadata["spec"], kinds[str(item.type).removesuffix(" | None")])
        for item in dataclasses.fields(TrainOptions)
    ]


def flag(name: str) -> str:
    """The command line's spelling of an option's name: ``min-count``."""
    return name.replace("_", "-")


def _check_number(name: str, value: object, spec: OptionSpec, kind: type) -> None:
    requirement = spec.requirement(kind)
    try:
        number = operator.index(value) if kind is int else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise _refused(flag(name), requirement, repr(value)) from None
    low = spec.minimum if spec.minimum is not None else -math.inf
    high = spec.maximum if spec.maximum is not None else math.inf
    if isinstance(value, bool) or not low <= number <= high:
        raise _refused(flag(name), requirement, repr(value))


def _refused(option: str, requirement: str, value: str) -> OptionError:
    return OptionError("train.option", option=option, requirement=requirement, value=value)
