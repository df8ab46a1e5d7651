"""A training run's checkpoint, ``checkpoint.safetensors``: the two tables, the vocabulary, and
in its metadata the options, the corpus (each file's size and SHA-256), the :class:`Position`,
the vocabulary's fingerprint and the digest of the whole content. :func:`load_checkpoint` checks
every byte of it before a run uses any: what it returns is all the compiled loop trusts
(``docs/training.md``, "Checkpoints and resuming").
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Final, cast

import numpy as np
import numpy.typing as npt

from llm_from_scratch.errors import (
    AllocationError,
    FileAccessError,
    FormatError,
    MismatchError,
    NonFiniteError,
)
from llm_from_scratch.nn.checkpoint import (
    CODES,
    STORED,
    StoredTensor,
    opened,
    read_tensor,
    write_arrays,
)
from llm_from_scratch.training.checkpoint_fields import (
    FieldError,
    SavedFile,
    checked_counts,
    checked_words,
    digest,
    integer,
    items,
    json_field,
    number,
    record,
    saved_corpus,
    shown,
    text,
)
from llm_from_scratch.training.checkpoint_fields import saved_options as checked_options
from llm_from_scratch.training.corpus import CorpusFile, file_digest
from llm_from_scratch.training.options import CHECKPOINT_FILE, TrainOptions
from llm_from_scratch.training.vocabulary import Vocabulary
from llm_from_scratch.training.words import TOKENS
from llm_from_scratch.training.words import WORDS as WORD_READING
from llm_from_scratch.vectors.table_pair import vocabulary_fingerprint

FORMAT: Final = "llm-from-scratch train checkpoint 2"
IDENTITY: Final = (
    "dim", "window", "negatives", "epochs", "min_count", "seed", "method", "reference",
    "tokenized", "sample", "alpha", "min_alpha", "ns_exponent", "max_vocab_size",
    "max_final_vocab",
)  # fmt: skip
"""The options a resumed run must share with the checkpoint (``--corpus`` may name a copy)."""
SAVED: Final = ("corpus", *IDENTITY, "threads", "checkpoint_minutes", "keep_model")
"""The options a checkpoint records: what a resumed run takes when it is not given them."""
FINGERPRINT_KEY: Final = "vocabulary_fingerprint"
"""The metadata entry of :func:`~llm_from_scratch.vectors.table_pair.vocabulary_fingerprint`."""
DIGEST_KEY: Final = "digest"
"""The metadata entry of :func:`content_digest`, of every other entry and every tensor."""
TABLES: Final = ("token_embedding.weight", "context_embedding.weight")
COUNTS: Final = "vocabulary.counts"
WORDS: Final = "vocabulary.words"
DTYPES: Final = {TABLES[0]: "F32", TABLES[1]: "F32", COUNTS: "I64", WORDS: "U8"}
"""Each tensor of a checkpoint, and its dtype."""


@dataclass(frozen=True)
class EpochTotals:
    """One epoch's summed loss and pairs, and its seconds of training."""

    loss: float = 0.0
    pairs: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Position:
    """Where a run is: the next block (its epoch, number in the epoch, file and offset), the
    words of the epoch before it, the totals of the epoch so far and of the epochs done."""

    epoch: int = 0
    block: int = 0
    file: int = 0
    offset: int = 0
    words: int = 0
    totals: EpochTotals = EpochTotals()
    done: tuple[EpochTotals, ...] = ()


@dataclass(frozen=True)
class Origin:
    """Where a run's tables started: drawn from the seed, or (a continued run, ``--continue``)
    the tables of a kept model in ``folder`` trained ``first_epoch`` epochs, with the words of
    the new corpus outside its vocabulary (``outside_words`` read, ``outside_distinct``
    different ones)."""

    first_epoch: int = 0
    outside_words: int = 0
    outside_distinct: int = 0
    folder: str | None = None


@dataclass(frozen=True, eq=False)
class CorpusRecord:
    """What a run trains on: its corpus files (with the encodings and digests found), the
    vocabulary counted on them, and every word of the corpus read (``words``)."""

    files: tuple[CorpusFile, ...]
    vocabulary: Vocabulary
    words: int


class OnCorpus:
    """A run, a checkpoint or a result of one :class:`CorpusRecord` (``corpus``), whose fields
    it gives as ``files``, ``vocabulary`` and ``corpus_words``."""

    corpus: CorpusRecord

    @property
    def files(self) -> tuple[CorpusFile, ...]:
        """The corpus files, with the encodings and digests found."""
        return self.corpus.files

    @property
    def vocabulary(self) -> Vocabulary:
        """The vocabulary counted on the corpus."""
        return self.corpus.vocabulary

    @property
    def corpus_words(self) -> int:
        """Every word of the corpus read (outside the vocabulary too)."""
        return self.corpus.words


@dataclass(frozen=True, eq=False)
class Checkpoint(OnCorpus):
    """A run's state (see the module docstring)."""

    options: TrainOptions
    corpus: CorpusRecord
    inputs: npt.NDArray[Any]
    contexts: npt.NDArray[Any]
    position: Position
    origin: Origin = Origin()


def save_checkpoint(checkpoint: Checkpoint) -> None:
    """Write ``checkpoint`` into its output folder atomically, straight from the tables.

    Raises:
        FileAccessError: ``checkpoint.write``; an earlier checkpoint is unchanged.
        CorpusError: ``corpus.unreadable``, a corpus file without its digest cannot be read.
    """
    options = checkpoint.options
    assert isinstance(options.corpus, Path), "a corpus of files"
    words = checkpoint.vocabulary.words
    arrays = [
        (TABLES[0], checkpoint.inputs),
        (TABLES[1], checkpoint.contexts),
        (COUNTS, np.asarray(checkpoint.vocabulary.counts)),
        (WORDS, np.frombuffer("\n".join(words).encode("utf-8"), dtype=np.uint8)),
    ]
    saved = {
        name: str(getattr(options, name)) if name == "corpus" else getattr(options, name)
        for name in SAVED
    }
    corpus = [
        [_relative(options.corpus, f.path), f.size, f.encoding, f.digest or file_digest(f)]
        for f in checkpoint.files
    ]
    metadata = {
        "format": FORMAT,
        "options": json.dumps(saved),
        "corpus": json.dumps(corpus),
        "corpus_words": str(checkpoint.corpus_words),
        "position": json.dumps(asdict(checkpoint.position)),
        "origin": json.dumps(asdict(checkpoint.origin)),
        FINGERPRINT_KEY: vocabulary_fingerprint(words),
    }
    metadata[DIGEST_KEY] = content_digest(metadata, arrays)
    write_arrays(str(options.output / CHECKPOINT_FILE), arrays, metadata)


def content_digest(
    metadata: Mapping[str, str], arrays: Sequence[tuple[str, npt.NDArray[Any]]]
) -> str:
    """The SHA-256 of a checkpoint's content: every metadata entry but :data:`DIGEST_KEY` (by
    key), then every tensor's name, dtype, shape and little-endian bytes (by name)."""
    found = hashlib.sha256()
    for key in sorted(metadata):
        if key != DIGEST_KEY:
            found.update(json.dumps([key, metadata[key]]).encode("utf-8") + b"\n")
    for name, array in sorted(arrays, key=lambda named: named[0]):
        stored = np.ascontiguousarray(array, array.dtype.newbyteorder("<"))
        code = CODES[stored.dtype]
        found.update(json.dumps([name, code, list(array.shape)]).encode("utf-8") + b"\n")
        found.update(stored.reshape(-1).view(np.uint8).data)
    return found.hexdigest()


def saved_options(folder: Path) -> dict[str, Any]:
    """The options of the run whose checkpoint is in ``folder`` (all but its output folder).

    Raises:
        MismatchError: ``resume.missing``, ``resume.unreadable`` (naming the field).
    """
    with _opened(folder) as (_, _, metadata):
        return _options(metadata)


def load_checkpoint(folder: Path, options: TrainOptions, files: list[CorpusFile]) -> Checkpoint:
    """The checkpoint in ``folder``, for a run of ``options`` on the corpus ``files`` as they
    are now, once every field and tensor of it is checked (see the module docstring).

    Raises:
        MismatchError: ``resume.missing``, ``resume.unreadable`` (naming the field or tensor),
            ``resume.options`` (other :data:`IDENTITY` options, each difference named),
            ``resume.corpus`` (a file missing, new, of another size or of other bytes).
    """
    assert isinstance(options.corpus, Path), "a corpus of files"
    with _opened(folder) as (file, tensors, metadata):
        differences = TrainOptions(**_options(metadata)).differences(options, IDENTITY)
        if differences:
            raise _resume_error("options", folder, "; ".join(differences))
        return _checkpoint(folder, (file, tensors, metadata), options, files)


@contextlib.contextmanager
def _opened(folder: Path) -> Iterator[tuple[io.FileIO, list[StoredTensor], dict[str, str]]]:
    """The checkpoint of ``folder`` opened, of this format; a refusal is ``resume.unreadable``."""
    path = folder / CHECKPOINT_FILE
    if not path.is_file():
        raise _resume_error("missing", folder, f"{path} is not a file")
    try:
        with opened(str(path)) as (file, tensors, metadata):
            if metadata.get("format") != FORMAT:
                raise FieldError("format", f"{shown(metadata.get('format'))}, not {FORMAT!r}")
            yield file, tensors, metadata
    except (FieldError, FileAccessError, FormatError, AllocationError, NonFiniteError) as error:
        raise _resume_error("unreadable", folder, str(error)) from error


def _options(metadata: Mapping[str, str]) -> dict[str, Any]:
    saved = checked_options(json_field(metadata, "options"), SAVED)
    return {**saved, "corpus": Path(saved["corpus"])}


def _checkpoint(
    folder: Path,
    content: tuple[io.FileIO, list[StoredTensor], Mapping[str, str]],
    options: TrainOptions,
    files: list[CorpusFile],
) -> Checkpoint:
    """Fields first, then each tensor's layout, then the data (the digest last), then the corpus."""
    file, tensors, metadata = content
    corpus = saved_corpus(json_field(metadata, "corpus"))
    total = sum(saved.size for saved in corpus)
    corpus_words = integer(json_field(metadata, "corpus_words"), "corpus_words", 1, total)
    position = _position(json_field(metadata, "position"), options.epochs, corpus)
    fingerprint = digest(metadata.get(FINGERPRINT_KEY), FINGERPRINT_KEY)
    stored = _layout(tensors, options.dim)
    path = str(folder / CHECKPOINT_FILE)
    arrays = {
        name: read_tensor(path, file, stored[name], _native(name), name in TABLES)
        for name in DTYPES
    }
    origin = _origin(json_field(metadata, "origin"), corpus_words)
    reading = TOKENS if options.tokenized else WORD_READING
    words = checked_words(WORDS, arrays[WORDS], len(arrays[COUNTS]), fingerprint, reading)
    if origin.folder is None:
        counts = checked_counts(COUNTS, arrays[COUNTS], words, options.min_count, corpus_words)
    else:  # a kept model's words, each counted in the new corpus (0 if absent), in its order
        counts = checked_counts(COUNTS, arrays[COUNTS], words, 0, corpus_words, ordered=False)
    recorded = digest(metadata.get(DIGEST_KEY), DIGEST_KEY)
    if content_digest(metadata, list(arrays.items())) != recorded:
        raise FieldError(DIGEST_KEY, "differs from the content's (the file was edited)")
    checked = _corpus_files(folder, cast(Path, options.corpus), corpus, files)
    found = CorpusRecord(checked, Vocabulary(words, counts, reading=reading), corpus_words)
    inputs, contexts = arrays[TABLES[0]], arrays[TABLES[1]]
    return Checkpoint(options, found, inputs, contexts, position, origin)


def _native(name: str) -> np.dtype[Any]:
    """The dtype a tensor of the checkpoint loads as: its own."""
    return STORED[DTYPES[name]].newbyteorder("=")


def _layout(tensors: list[StoredTensor], dim: int) -> dict[str, StoredTensor]:
    """The tensors by name, once they are :data:`DTYPES` of the shapes a vocabulary gives."""
    stored = {tensor.name: tensor for tensor in tensors}
    for name in (*DTYPES, *stored):
        if name not in stored:
            raise FieldError(name, "missing")
        if name not in DTYPES:
            raise FieldError(name, "is no tensor of a checkpoint")
        if stored[name].dtype != DTYPES[name]:
            raise FieldError(name, f"of dtype {stored[name].dtype}, not {DTYPES[name]}")
    for name in (WORDS, COUNTS):
        if len(stored[name].shape) != 1:
            raise FieldError(name, f"of shape {list(stored[name].shape)}, not one axis")
    rows = stored[COUNTS].shape[0]
    if rows < 2:
        raise FieldError(COUNTS, f"holds {rows} counts: a vocabulary has a word and [UNK]")
    for name in TABLES:
        if stored[name].shape != (rows, dim):
            expected = f"[{rows}, {dim}] (a row per count, options.dim wide)"
            raise FieldError(name, f"of shape {list(stored[name].shape)}, not {expected}")
    return stored


def _position(value: object, epochs: int, corpus: tuple[SavedFile, ...]) -> Position:
    """The position a checkpoint records, inside its run and its corpus (blocks and words no more
    than the bytes before it, one total per epoch done)."""
    found = record(value, "position", tuple(item.name for item in fields(Position)))
    epoch = integer(found["epoch"], "position.epoch", 0, epochs)
    file = integer(found["file"], "position.file", 0, len(corpus) - 1)
    offset = integer(found["offset"], "position.offset", 0, corpus[file].size)
    read = sum(saved.size for saved in corpus[:file]) + offset
    block = integer(found["block"], "position.block", 0, read)
    words = integer(found["words"], "position.words", 0, read)
    totals = _totals(found["totals"], "position.totals")
    done = items(found["done"], "position.done", epoch)
    done_totals = (_totals(item, f"position.done[{index}]") for index, item in enumerate(done))
    position = Position(epoch, block, file, offset, words, totals, tuple(done_totals))
    if epoch == epochs and position != Position(epoch, done=position.done):
        raise FieldError("position", "the run is done, yet a block is recorded to go on from")
    return position


def _origin(value: object, corpus_words: int) -> Origin:
    """Where the run's tables started: the seed (all zero), or a kept model (a folder)."""
    found = record(value, "origin", tuple(item.name for item in fields(Origin)))
    first_epoch = integer(found["first_epoch"], "origin.first_epoch", 0, 2**63 - 1)
    outside = integer(found["outside_words"], "origin.outside_words", 0, corpus_words)
    distinct = integer(found["outside_distinct"], "origin.outside_distinct", 0, outside)
    folder = None if found["folder"] is None else text(found["folder"], "origin.folder")
    origin = Origin(first_epoch, outside, distinct, folder)
    if folder is None and origin != Origin():
        raise FieldError("origin", "a run drawn from the seed, yet it records a kept model's")
    return origin


def _totals(value: object, field: str) -> EpochTotals:
    found = record(value, field, ("loss", "pairs", "seconds"))
    loss = number(found["loss"], f"{field}.loss", 0.0, float("inf"))
    pairs = integer(found["pairs"], f"{field}.pairs", 0, 2**63 - 1)
    return EpochTotals(loss, pairs, number(found["seconds"], f"{field}.seconds", 0.0, 1e12))


def _relative(root: Path, path: Path) -> str:
    return "." if path == root else path.relative_to(root).as_posix()


def _corpus_files(
    folder: Path, root: Path, saved: tuple[SavedFile, ...], files: list[CorpusFile]
) -> tuple[CorpusFile, ...]:
    """The checkpoint's corpus files, if ``files`` (the corpus now) are the same files and bytes."""
    now = {_relative(root, file.path): file for file in files}
    found = []
    for entry in saved:
        path = root if entry.name == "." else root / entry.name
        current = now.get(entry.name)
        if current is None:
            raise _resume_error("corpus", folder, f"{path} is missing")
        if current.size != entry.size:
            detail = f"{path} has {current.size} bytes, the checkpoint's had {entry.size}"
            raise _resume_error("corpus", folder, detail)
        found.append(CorpusFile(path, entry.size, entry.encoding, entry.digest))
    extra = sorted(set(now) - {entry.name for entry in saved})
    if extra:
        detail = f"{root / extra[0]} is new ({len(extra)} new files)"
        raise _resume_error("corpus", folder, detail)
    for file in found:
        if file_digest(file) != file.digest:
            detail = f"{file.path} holds other bytes than the checkpoint's (the same size)"
            raise _resume_error("corpus", folder, detail)
    return tuple(found)


def _resume_error(problem: str, folder: Path, detail: str) -> MismatchError:
    return MismatchError(f"resume.{problem}", folder=str(folder), detail=detail)
