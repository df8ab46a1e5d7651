"""``ch18 train`` driven with random options and corpora, in this process, for
``tests/train/test_hostile_runs.py``, which runs this file as a process of its own under an
address-space limit. Each case asserts: status 0 with both files, or one ``error:`` line (after
the progress lines) with the status of its kind; never a traceback; never a table without its
tokenizer. Prints the number of cases run.

Usage: ``python tests/train/cli_under_cap.py CASES``.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_from_scratch.cli import main

NUMBERS = st.one_of(
    st.integers(-3, 12),
    st.sampled_from([0, 1, 2, 1000, 1001, 10**5, 2**31, 2**63, 2**64, 2**80, -(2**70)]),
)
OPTIONS = {
    "--dim": NUMBERS,
    "--window": NUMBERS,
    "--negatives": NUMBERS,
    "--epochs": st.integers(-1, 3),
    "--min-count": NUMBERS,
    "--seed": NUMBERS,
    "--threads": st.integers(-1, 4),
    "--checkpoint-minutes": st.sampled_from(["0", "0.0000001", "-1", "nan", "inf", "1e9", "x"]),
    "--memory-budget": st.sampled_from(["1", "200", "300", "100000", "0", "-5"]),
    "--sample": st.sampled_from(["0", "1e-3", "0.5", "1", "40", "1e15", "1e16", "-1", "nan"]),
    "--alpha": st.sampled_from(["0", "0.025", "10", "11", "-0.1", "inf"]),
    "--min-alpha": st.sampled_from(["0", "0.0001", "0.5", "10", "-1", "nan"]),
    "--ns-exponent": st.sampled_from(["-10", "-0.5", "0", "1", "10", "10.5", "nan"]),
    "--max-vocab-size": NUMBERS,
    "--max-final-vocab": NUMBERS,
    "--tokenized": st.none(),
    "--keep-model": st.none(),
}
LINES = st.lists(
    st.sampled_from(["the king and the queen", "one two three", "отец и мать", "ΣΟΦΟΣ λόγος"]),
    min_size=1,
    max_size=12,
).map(lambda lines: "\n".join(lines * 4))
TEXT = st.one_of(
    LINES,
    LINES,
    st.text(alphabet=st.sampled_from("ab cd\n\r'é жΣ2_\x00"), max_size=400),
    st.binary(max_size=300).map(lambda data: data.decode("latin-1")),
    st.just(""),
)
cases = 0
statuses: dict[int, int] = {}


@given(
    texts=st.lists(TEXT, min_size=0, max_size=3),
    chosen=st.dictionaries(st.sampled_from(sorted(OPTIONS)), st.none(), max_size=5),
    data=st.data(),
    earlier=st.booleans(),
)
def one_run(texts: list[str], chosen: dict[str, None], data: st.DataObject, earlier: bool) -> None:
    global cases
    cases += 1
    scratch = Path(tempfile.mkdtemp())
    try:
        corpus = scratch / "corpus"
        corpus.mkdir()
        for index, text in enumerate(texts):
            (corpus / f"{index}.txt").write_text(text, encoding="utf-8", errors="surrogatepass")
        output = scratch / "out"
        if earlier:
            output.mkdir()
            (output / "table.safetensors").write_bytes(b"earlier table")
            (output / "tokenizer.json").write_bytes(b"earlier tokenizer")
        argv = ["ch18", "train", "--corpus", str(corpus), "--output", str(output)]
        for flag in chosen:
            value = data.draw(OPTIONS[flag], label=flag)
            argv += [flag] if value is None else [flag, str(value)]
        if "--epochs" not in chosen:
            argv += ["--epochs", "1"]
        if "--dim" not in chosen:
            argv += ["--dim", "8"]
        if "--min-count" not in chosen:
            argv += ["--min-count", "1"]
        check(argv, output, earlier)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check(argv: list[str], output: Path, earlier: bool) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exit_:
            status = int(exit_.code or 0)
    errors = err.getvalue()
    statuses[status] = statuses.get(status, 0) + 1
    assert "Traceback" not in errors, (argv, errors)
    names = sorted(path.name for path in output.iterdir()) if output.is_dir() else []
    pair = {"table.safetensors", "tokenizer.json"}
    assert ("table.safetensors" in names) == ("tokenizer.json" in names), (argv, names)
    if status == 0:
        assert pair <= set(names) and "Wrote " in out.getvalue(), (argv, errors)
        return
    lines = errors.splitlines()
    assert status in (1, 2), (argv, status, errors)
    assert lines and lines[-1].startswith(("error: ", "usage: ", "llm-from-scratch")), errors
    if status == 2 and not earlier:
        assert not (pair & set(names)), (argv, names)
    if earlier and status == 2:
        assert (output / "table.safetensors").read_bytes() == b"earlier table"


if __name__ == "__main__":
    settings(
        max_examples=int(sys.argv[1]),
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )(one_run)()
    print(cases, " ".join(f"{status}:{count}" for status, count in sorted(statuses.items())))
