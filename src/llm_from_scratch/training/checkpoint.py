"""A training run's checkpoint, ``checkpoint.safetensors`` in the output folder: the two tables,
the vocabulary, and in its metadata the options, the corpus and the :class:`Position`
(``docs/training.md``, "Checkpoints and resuming").
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.errors import MismatchError
from llm_from_scratch.nn.checkpoint import write_arrays
from llm_from_scratch.training.corpus import CorpusFile, os_reason
from llm_from_scratch.training.options import CHECKPOINT_FILE, TrainOptions
from llm_from_scratch.training.vocabulary import Vocabulary

FORMAT: Final = "llm-from-scratch train checkpoint 1"
IDENTITY: Final = (
    "dim", "window", "negatives", "epochs", "min_count", "seed", "method", "reference",
)  # fmt: skip
"""The options a resumed run must share with the checkpoint (``--threads`` and
``--checkpoint-minutes`` may change, and ``--corpus`` may name a copy of the same files)."""
SAVED: Final = ("corpus", *IDENTITY, "threads", "checkpoint_minutes")
"""The options a checkpoint records: what a resumed run takes when it is not given them."""


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


@dataclass(frozen=True, eq=False)
class Checkpoint:
    """A run's state (see the module docstring)."""

    options: TrainOptions
    files: tuple[CorpusFile, ...]
    vocabulary: Vocabulary
    corpus_words: int
    inputs: npt.NDArray[Any]
    contexts: npt.NDArray[Any]
    position: Position


def save_checkpoint(checkpoint: Checkpoint) -> None:
    """Write ``checkpoint`` into its output folder atomically, straight from the tables.

    Raises:
        FileAccessError: ``checkpoint.write``; an earlier checkpoint is unchanged.
    """
    options = checkpoint.options
    assert options.corpus is not None
    words = "\n".join(checkpoint.vocabulary.words).encode("utf-8")
    arrays = [
        ("token_embedding.weight", checkpoint.inputs),
        ("context_embedding.weight", checkpoint.contexts),
        ("vocabulary.counts", np.asarray(checkpoint.vocabulary.counts)),
        ("vocabulary.words", np.frombuffer(words, dtype=np.uint8)),
    ]
    saved = {
        name: str(getattr(options, name)) if name == "corpus" else getattr(options, name)
        for name in SAVED
    }
    metadata = {
        "format": FORMAT,
        "options": json.dumps(saved),
        "corpus": json.dumps(
            [[_relative(options.corpus, f.path), f.size, f.encoding] for f in checkpoint.files]
        ),
        "corpus_words": str(checkpoint.corpus_words),
        "position": json.dumps(asdict(checkpoint.position)),
    }
    write_arrays(str(options.output / CHECKPOINT_FILE), arrays, metadata)


def saved_options(folder: Path) -> dict[str, Any]:
    """The options of the run whose checkpoint is in ``folder`` (all but its output folder).

    Raises:
        MismatchError: ``resume.missing``, ``resume.unreadable``.
    """
    _, metadata = _read(folder, with_tensors=False)
    try:
        saved = json.loads(metadata["options"])
        saved["corpus"] = Path(saved["corpus"])
        saved.setdefault("method", "pairs")  # a checkpoint from before methods trained pairs
        return {name: saved[name] for name in SAVED}
    except (ValueError, KeyError, TypeError) as error:
        raise _resume_error("unreadable", folder, str(error)) from error


def load_checkpoint(folder: Path, options: TrainOptions, files: list[CorpusFile]) -> Checkpoint:
    """The checkpoint in ``folder``, for a run of ``options`` on the corpus ``files`` as they
    are now.

    Raises:
        MismatchError: ``resume.missing``, ``resume.unreadable``, ``resume.options`` (other
            :data:`IDENTITY` options, each difference named), ``resume.corpus``.
    """
    saved = TrainOptions(**saved_options(folder))
    differences = saved.differences(options, IDENTITY)
    if differences:
        raise _resume_error("options", folder, "; ".join(differences))
    tensors, metadata = _read(folder, with_tensors=True)
    try:
        corpus = json.loads(metadata["corpus"])
        position = _position(json.loads(metadata["position"]))
        corpus_words = int(metadata["corpus_words"])
        words = bytes(tensors["vocabulary.words"]).decode("utf-8").split("\n")
        vocabulary = Vocabulary(tuple(words), tensors["vocabulary.counts"])
        inputs, contexts = tensors["token_embedding.weight"], tensors["context_embedding.weight"]
    except (ValueError, KeyError, TypeError) as error:
        raise _resume_error("unreadable", folder, str(error)) from error
    assert options.corpus is not None
    checked = _corpus_files(folder, options.corpus, corpus, files)
    return Checkpoint(options, checked, vocabulary, corpus_words, inputs, contexts, position)


def _read(folder: Path, with_tensors: bool) -> tuple[dict[str, npt.NDArray[Any]], dict[str, str]]:
    from safetensors import SafetensorError, safe_open

    path = folder / CHECKPOINT_FILE
    if not path.is_file():
        raise _resume_error("missing", folder, f"{path} is not a file")
    try:
        with safe_open(str(path), framework="numpy") as handle:
            metadata = handle.metadata() or {}
            if metadata.get("format") != FORMAT:
                detail = f"its format is {metadata.get('format')!r}, not {FORMAT!r}"
                raise _resume_error("unreadable", folder, detail)
            names = handle.keys() if with_tensors else []
            tensors = {name: handle.get_tensor(name) for name in names}  # new, writable arrays
    except (OSError, SafetensorError) as error:
        detail = os_reason(error) if isinstance(error, OSError) else str(error)
        raise _resume_error("unreadable", folder, detail) from error
    return tensors, metadata


def _position(record: dict[str, Any]) -> Position:
    totals = EpochTotals(**record.pop("totals"))
    done = tuple(EpochTotals(**item) for item in record.pop("done"))
    return Position(**record, totals=totals, done=done)


def _relative(root: Path, path: Path) -> str:
    return "." if path == root else path.relative_to(root).as_posix()


def _corpus_files(
    folder: Path, root: Path, saved: list[list[Any]], files: list[CorpusFile]
) -> tuple[CorpusFile, ...]:
    """The checkpoint's corpus files (with the encodings found when it counted them), if
    ``files`` (the corpus as it is now) are the same files of the same sizes."""
    now = {_relative(root, file.path): file for file in files}
    found = []
    for name, size, encoding in saved:
        path = root if name == "." else root / name
        current = now.get(name)
        if current is None:
            raise _resume_error("corpus", folder, f"{path} is missing")
        if current.size != size:
            detail = f"{path} has {current.size} bytes, the checkpoint's had {size}"
            raise _resume_error("corpus", folder, detail)
        found.append(CorpusFile(path, size, encoding))
    extra = sorted(set(now) - {name for name, _, _ in saved})
    if extra:
        detail = f"{root / extra[0]} is new ({len(extra)} new files)"
        raise _resume_error("corpus", folder, detail)
    return tuple(found)


def _resume_error(problem: str, folder: Path, detail: str) -> MismatchError:
    return MismatchError(f"resume.{problem}", folder=str(folder), detail=detail)
