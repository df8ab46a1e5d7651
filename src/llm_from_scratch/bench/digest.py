"""``llm-from-scratch bench digest [CORPUS]``: the SHA-256 of every file of a corpus beside the
word count every run starts with, in turns, then the digest of a 1 GiB file (written to a
temporary folder and removed) against reading it alone (``docs/training.md``)."""

from __future__ import annotations

import os
import platform
import tempfile
from pathlib import Path
from typing import Final

from llm_from_scratch.bench.rounds import Timed, round_robin_medians
from llm_from_scratch.training.corpus import (
    DIGEST_BYTES,
    CorpusFile,
    corpus_files,
    count_words,
    file_digest,
)

GIB: Final = 1 << 30


def _read_only(file: CorpusFile) -> None:
    with open(file.path, "rb", buffering=0) as stream:
        while stream.read(DIGEST_BYTES):
            pass


def corpus_lines(corpus: Path, repeats: int) -> list[str]:
    """The digests of ``corpus`` beside its word count: medians and their ratio."""
    files = corpus_files(corpus)
    medians = round_robin_medians(
        {
            "digests": Timed(lambda: [file_digest(file) for file in files]),
            "word count": Timed(lambda: count_words(files)),
        },
        repeats,
    )
    size = sum(file.size for file in files)
    ratio = medians["digests"] / medians["word count"]
    return [
        f"{corpus}: {len(files)} files, {size:,} bytes",
        f"  SHA-256 of every file  {medians['digests']:.6f} s",
        f"  word count (as a run)  {medians['word count']:.6f} s",
        f"  digests / word count   {ratio:.4f}",
    ]


def gib_lines(repeats: int) -> list[str]:
    """The digest of a 1 GiB file (from the page cache) against reading it alone."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gib.txt"
        line = b"the quick brown fox jumps over the lazy dog\n"
        with open(path, "wb") as stream:
            stream.write(line * (GIB // len(line)))
        os.truncate(path, GIB)
        file = corpus_files(path)[0]
        medians = round_robin_medians(
            {"read": Timed(lambda: _read_only(file)), "sha-256": Timed(lambda: file_digest(file))},
            repeats,
        )
    return [
        "1 GiB file, page cache:",
        f"  read alone   {medians['read']:.3f} s",
        f"  SHA-256      {medians['sha-256']:.3f} s per GiB",
        f"  SHA-256 / read {medians['sha-256'] / medians['read']:.2f}",
    ]


def run(corpus: Path, repeats: int, no_gib: bool) -> int:
    """Measure and print, ``repeats`` rounds (``no_gib``: without the 1 GiB file)."""
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} processors")
    print(f"medians of {repeats} rounds, in turns, after a warm-up round")
    for line in [*corpus_lines(corpus, repeats), *([] if no_gib else gib_lines(repeats))]:
        print(line)
    return 0
