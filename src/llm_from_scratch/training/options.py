"""The options of a training run, declared once: each field of :class:`TrainOptions` carries its
help, default and range, from which the command line, the checks and the report are built. The
options gensim's ``Word2Vec`` shares keep its names, defaults and meanings; its other names are
answered with ours (:data:`GENSIM_NAMES`)."""

from __future__ import annotations

import dataclasses
import math
import operator
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from llm_from_scratch.errors import OptionError, PyTorchNameError
from llm_from_scratch.files import machine_memory_bytes, os_path, temporary_path

TABLE_FILE: Final = "table.safetensors"
TOKENIZER_FILE: Final = "tokenizer.json"
CHECKPOINT_FILE: Final = "checkpoint.safetensors"
MODEL_FILE: Final = "model.safetensors"
"""The context table kept beside the pair (``keep_model``), which ``--continue`` trains further."""
RATES: Final = (0.025, 0.0001)
"""The learning rate at the first and the last word of a run (gensim's defaults)."""
SAMPLE: Final = 1e-3
"""gensim's subsampling threshold ``sample``."""
NOISE_POWER: Final = 0.75
"""The power of the unigram counts in the noise distribution (gensim's ``ns_exponent``)."""
GENSIM_NAMES: Final = {
    "vector_size": "dim",
    "size": "dim",
    "workers": "threads",
    "negative": "negatives",
    "iter": "epochs",
    "sentences": "corpus (a path, or a restartable iterable of token lists)",
    "corpus_iterable": "corpus (a path, or a restartable iterable of token lists)",
    "corpus_file": "corpus, with tokenized=True for gensim's LineSentence format",
    "sg": "no such option, the model is always skip-gram (sg=1): leave it out",
    "hs": "no such option, the loss is always negative sampling (hs=0): negatives",
    "callbacks": "Run.train(on_epoch=...), called with each epoch's summary and vectors",
    "compute_loss": "no such option, the loss is always computed (EpochSummary.mean_loss)",
}
"""gensim's ``Word2Vec`` keywords named otherwise here, each with ours (``gensim.name``)."""
GENSIM_OPTIONS: Final = {
    "--vector-size": "--dim",
    "--size": "--dim",
    "--workers": "--threads",
    "--negative": "--negatives",
    "--iter": "--epochs",
    "--corpus-file": "--corpus, with --tokenized for gensim's LineSentence format",
    "--sg": "no such option, ch18 train is always skip-gram (sg=1): leave it out",
    "--hs": "no such option, the loss is always negative sampling (hs=0): --negatives",
    "--compute-loss": "no such option, the loss is always computed and reported",
}
"""The same names on the command line of ``ch18 train``."""
MEMORY_BUDGET_VARIABLE: Final = "LLM_FROM_SCRATCH_MEMORY_BUDGET"
"""The memory budget (MB) when ``--memory-budget`` is not given."""
RUNTIME_BYTES: Final = 1 << 30
"""What the interpreter, Numba and LLVM take of an address-space limit before any table."""
METHODS: Final = ("hogbatch", "pairs")
"""The training methods (``--method``), the default first."""
BYTES_PER_VALUE: Final = 8
"""The memory a run plans per value of its ``[V, d]`` tables: two float32 tables trained in place
(``docs/performance.md``, "Where the time and the memory go")."""
BYTES_PER_WORD: Final = 512
"""The memory a run plans per word of its vocabulary (about 500 measured at 200,000 words)."""
RUNTIME_MB: Final = 240
"""The memory a run plans besides its tables and vocabulary: the interpreter, NumPy, Numba, LLVM
and the compiled loop (about 210 MB), with room for the report."""


def planned_megabytes(vocabulary_size: int, dim: int, kept_bytes: int = 0) -> int:
    """The memory (MB) a run of a ``[vocabulary_size, dim]`` table plans: :data:`RUNTIME_MB`,
    :data:`BYTES_PER_VALUE` a table value, :data:`BYTES_PER_WORD` a word, and the ``kept_bytes``
    of tokens it keeps for its later epochs
    (:func:`~llm_from_scratch.training.sources.kept_tokens_bytes`).

    Example:
        >>> planned_megabytes(200_001, 300)
        796
    """
    planned = vocabulary_size * (dim * BYTES_PER_VALUE + BYTES_PER_WORD) + kept_bytes
    return RUNTIME_MB + -(-planned // 2**20)


@dataclass(frozen=True)
class OptionSpec:
    """One option's help, and the range of a number (``maximum`` None: the type's bound)."""

    help: str
    minimum: int | float | None = None
    maximum: int | float | None = None
    metavar: str = "N"
    choices: tuple[str, ...] = ()
    shown: str | None = None
    """The default as ``--help`` shows it, when not the value itself."""

    def requirement(self, kind: type) -> str:
        """The range in words: ``an integer from 1 to 10000``, or ``one of pairs, hogbatch``."""
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        noun = "an integer" if kind is int else "a number"
        if self.maximum is None:
            return f"{noun} of at least {self.minimum}"
        return f"{noun} from {self.minimum} to {self.maximum}"


def _option(default: Any, text: str, minimum: float | None = None, **spec: Any) -> Any:
    """A field of :class:`TrainOptions` (a new ``dataclasses.field``: RUF009 cannot see it)."""
    return field(default=default, metadata={"spec": OptionSpec(text, minimum, **spec)})


@dataclass(frozen=True)
class TrainOptions:
    """What a training run is asked to do (see :meth:`checked`)."""

    corpus: Path | Iterable[Sequence[str]] | None = _option(  # noqa: RUF009
        None,
        "a text file or a folder of .txt files (in Python also a restartable iterable of token "
        "lists, their tokens kept as they are)",
        metavar="PATH",
    )
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
    tokenized: bool = _option(
        False,
        "the corpus is pre-tokenized: its tokens are the runs of characters between white space, "
        "kept as they are (new_york, 2024, Paris), one sentence a line (gensim's LineSentence)",
    )
    sample: float = _option(
        SAMPLE,
        "gensim's sample: an occurrence of a word of count c among T words is kept with "
        "probability (sqrt(c/(sT)) + 1) sT/c; 0 keeps every word; 1 or more downsamples the "
        "words seen more than that many times",
        0,
        maximum=10**15,
        metavar="S",
    )
    alpha: float = _option(
        RATES[0], "the learning rate at the first word", 0, maximum=10, metavar="A"
    )
    min_alpha: float = _option(
        RATES[1],
        "the learning rate at the last word; it falls linearly from --alpha over the run",
        0,
        maximum=10,
        metavar="A",
    )
    ns_exponent: float = _option(
        NOISE_POWER,
        "noise words are drawn in proportion to count ** ns_exponent: 1 as often as they occur, "
        "0 all alike, below 0 rare words more often",
        -10,
        maximum=10,
        metavar="E",
    )
    max_vocab_size: int | None = _option(
        None,
        "gensim's max_vocab_size: while counting, whenever more different words than this are "
        "held, forget the rarest (those seen fewer than 1, 2, 3, ... times, one more each time)",
        1,
        maximum=2**63 - 1,
        shown="no limit",
    )
    max_final_vocab: int | None = _option(
        None,
        "gensim's max_final_vocab: raise --min-count so that at most this many words are kept",
        1,
        maximum=2**63 - 1,
        shown="no limit",
    )
    keep_model: bool = _option(
        False,
        f"also keep the context table in {MODEL_FILE} beside the pair, so that --continue can "
        "train both further",
    )

    @property
    def rates(self) -> tuple[float, float]:
        """The learning rate at the first and the last word: ``(alpha, min_alpha)``."""
        return (self.alpha, self.min_alpha)

    @property
    def reads_files(self) -> bool:
        """Whether the corpus is a path (else an iterable of token lists)."""
        return isinstance(self.corpus, Path)

    def checked(self, thread_limit: int) -> TrainOptions:
        """The same options if every one is in range, in the order of the fields, with
        ``threads`` (None: ``thread_limit``) and ``memory_budget`` (None: the default) set.

        Raises:
            OptionError: ``train.option``, the first option out of range.
        """
        corpus = checked_corpus(self.corpus)
        staged = temporary_path(str(self.output / TABLE_FILE))  # the longest name written
        paths = [("output", self.output, staged)]
        if isinstance(corpus, Path):
            paths.insert(0, ("corpus", corpus, str(corpus)))
        for name, path, checked in paths:
            try:
                os_path(checked)
            except OSError as error:
                shown = f"{str(path)!r} ({error.strerror})"
                raise _refused(name, "a path the system can take", shown) from error
        threads = thread_limit if self.threads is None else self.threads
        budget = default_memory_budget() if self.memory_budget is None else self.memory_budget
        checked_options = replace(self, corpus=corpus, threads=threads, memory_budget=budget)
        for name, spec, kind in option_fields():
            value = getattr(checked_options, name)
            if spec.choices and value not in spec.choices:
                raise _refused(flag(name), spec.requirement(kind), repr(value))
            if spec.minimum is not None and value is not None:
                bounded = replace(spec, maximum=thread_limit) if name == "threads" else spec
                _check_number(name, value, bounded, kind)
        _check_output(self.output)
        return checked_options

    def check_memory(self, vocabulary_size: int, kept_bytes: int = 0) -> None:
        """Refuse a run whose ``[vocabulary_size, dim]`` tables and ``kept_bytes`` of tokens
        would not fit the memory budget (:func:`planned_megabytes`).

        Raises:
            OptionError: ``train.option``, ``--memory-budget`` below what the run needs.
        """
        needed = planned_megabytes(vocabulary_size, self.dim, kept_bytes)
        if self.memory_budget is not None and needed > self.memory_budget:
            kept = f" and {-(-kept_bytes // 2**20)} MB of kept tokens" if kept_bytes else ""
            requirement = (
                f"at least {needed} MB for a {vocabulary_size}x{self.dim} table{kept} (lower "
                f"--dim or raise --min-count, or raise the budget)"
            )
            raise _refused("memory-budget", requirement, f"{self.memory_budget} MB")

    def differences(self, other: TrainOptions, names: tuple[str, ...]) -> list[str]:
        """``--window 5, not 4`` for each of ``names`` whose value differs in ``other``."""
        return [
            f"--{flag(name)} {getattr(self, name)}, not {getattr(other, name)}"
            for name in names
            if getattr(self, name) != getattr(other, name)
        ]


def _gensim_keywords(init: Any) -> Any:
    """``TrainOptions.__init__``, refusing gensim's names (:data:`GENSIM_NAMES`) first."""

    def refusing(self: TrainOptions, *args: Any, **kwargs: Any) -> None:
        for name in kwargs:
            if name in GENSIM_NAMES:
                raise gensim_name("TrainOptions", "argument", name, GENSIM_NAMES[name])
        init(self, *args, **kwargs)

    refusing.__doc__, refusing.__wrapped__ = init.__doc__, init  # type: ignore[attr-defined]
    return refusing


TrainOptions.__init__ = _gensim_keywords(TrainOptions.__init__)  # type: ignore[method-assign]


def gensim_name(owner: str, kind: str, name: str, ours: str) -> PyTorchNameError:
    """The error that answers gensim's ``name`` with ``ours``."""
    return PyTorchNameError("gensim.name", owner=owner, kind=kind, gensim_name=name, ours=ours)


def checked_corpus(corpus: object) -> Path | Iterable[Sequence[str]]:
    """``corpus`` as a :class:`~pathlib.Path` (given as one, or as ``str``), or the restartable
    iterable it is.

    Raises:
        OptionError: ``train.option`` (nothing, or neither a path nor an iterable),
            ``train.one-shot-corpus`` (an iterator, such as a generator, that a second pass
            would find empty).
    """
    if isinstance(corpus, (str, os.PathLike)):
        return Path(corpus)
    requirement = "a text file or a folder of .txt files, or a restartable iterable of token lists"
    if corpus is None or isinstance(corpus, (bytes, bytearray)):
        raise _refused("corpus", requirement, "nothing" if corpus is None else repr(corpus))
    try:
        once = iter(corpus) is corpus  # type: ignore[call-overload]
    except TypeError:
        raise _refused("corpus", requirement, f"a {type(corpus).__name__}") from None
    if once:
        raise OptionError("train.one-shot-corpus", kind=type(corpus).__name__)
    return corpus  # type: ignore[return-value]


def processor_count() -> int:
    """The processors this process may run on: the most training threads."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


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
    budget = machine_memory_bytes() // 2
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
        if existing.is_symlink():  # a link to nothing: no folder can be made there
            link = f"{existing}, a symbolic link to {os.readlink(existing)}, which does not exist"
            shown = link if existing == folder else f"{folder}, below {link}"
            raise _refused("output", "a folder, or a path where one can be made", shown)
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        shown = (
            f"the file {folder}" if existing == folder else f"{folder}, below the file {existing}"
        )
        raise _refused("output", "a folder", shown)
    for name in (TABLE_FILE, TOKENIZER_FILE, CHECKPOINT_FILE, MODEL_FILE):
        target = folder / name
        if target.exists() and not target.is_file():
            shown = f"{target}, which is a folder"
            raise _refused("output", f"a folder where {name} can be written", shown)


def option_fields() -> list[tuple[str, OptionSpec, type]]:
    """Each option's name, spec and type (``int``, ``float``, ``bool``, ``str`` or ``Path``), in
    order."""
    kinds = {"Path": Path, "int": int, "float": float, "bool": bool, "str": str}
    return [
        (item.name, item.metadata["spec"], kinds[str(item.type).split(" | ")[0]])
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
    if isinstance(value, bool) or not low <= number <= high or not math.isfinite(number):
        raise _refused(flag(name), requirement, repr(value))


def _refused(option: str, requirement: str, value: str) -> OptionError:
    return OptionError("train.option", option=option, requirement=requirement, value=value)
