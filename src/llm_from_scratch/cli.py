"""The ``llm-from-scratch`` command line (the process around it: ``llm_from_scratch.__main__``).

Every subcommand imports its chapter lazily, so that ``--help`` and the demo start quickly. A word
of the command line that is not text is refused with status 2 before anything runs; whatever a
command raises is reported on one line by :func:`llm_from_scratch.exits.run_command`.
"""

from __future__ import annotations

import argparse
import sys
from argparse import SUPPRESS
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn, Protocol, TextIO

from llm_from_scratch.exits import run_command
from llm_from_scratch.files import check_text, one_line

if TYPE_CHECKING:
    from llm_from_scratch.demos.ch18_token_embeddings import Ch18Fixture


class _Subcommands(Protocol):
    """What ``add_subparsers`` returns, as far as this module uses it."""

    def add_parser(self, name: str, **options: Any) -> argparse.ArgumentParser: ...


CH18_DESCRIPTION = (
    "Chapter 18, token embeddings. Without a subcommand, prints the chapter demo: a 4x2 table, "
    "IDs [[2,1,2]], the lookup, and the repeated row's summed gradient. --ids runs the same "
    "table on your own IDs; errors exit with status 2."
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
    "red, dog). Errors are one line with exit status 2."
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
    "stream, one sentence per line; threads train their own blocks on the shared tables. "
    "Prints progress to standard error; writes DIR/table.safetensors and DIR/tokenizer.json "
    "(replaced only when both are complete) and a checkpoint after each epoch and every "
    "--checkpoint-minutes (--resume DIR goes on from it); ends with a report of the tables "
    "before and after training (in Russian for a Russian corpus or --lang ru; --figure FILE "
    "also as an HTML page). With --seed and --threads 1 two runs write the same bytes. Bad "
    "options are one line with exit status 2, before any file is written; a file that cannot "
    "be written, status 1; Ctrl-C stops within seconds (status 130), leaving the folder's "
    "earlier files and the last checkpoint. Everything about it: docs/training.md."
)
UPSTREAM_HELP = (
    "the upstream gradient dL/dX as JSON: nested lists with the output's shape [*, 2], or a flat "
    "list of its values in row-major order. Default with --ids: 1, 2, 3, ... in row-major order "
    "over the output shape, so that every repeated row's sum stays visible; without --ids: the "
    "chapter's seed [[[1,0],[0,2],[3,4]]] (then --upstream applies to the IDs [[2,1,2]])"
)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose error line escapes what it echoes (:func:`one_line`)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the full argument parser (``--help`` works at every level)."""
    parser = _Parser(
        prog="llm-from-scratch",
        description="Run the chapters of the LLM-from-scratch course.",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help=(
            "print the traceback of an error above its line (without it, the traceback of an "
            "unexpected error goes to a log file whose path the line gives)"
        ),
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_ch18(commands)
    _add_bench(commands)
    return parser


def _add_ch18(commands: _Subcommands) -> None:
    from llm_from_scratch.figures.cli import add_language, configure_parser

    summary = (
        "token embeddings: the chapter demo, its trace, its figure, neighbours, exercises, "
        "training a table"
    )
    ch18 = commands.add_parser("ch18", help=summary, description=CH18_DESCRIPTION)
    add_fixture_options(ch18)
    views = ch18.add_subparsers(dest="view", metavar="VIEW")
    summary = "print the machine-readable trace token-embeddings-v1"
    add_fixture_options(views.add_parser("trace", help=summary, description=TRACE_DESCRIPTION))
    summary = "write the static HTML figure of the trace"
    description = "Write a self-contained HTML figure of the token-embedding trace."
    figure = views.add_parser("figure", help=summary, description=description)
    configure_parser(figure)
    add_fixture_options(figure)
    summary = "ID neighbours against vector neighbours in a trained table"
    neighbours = views.add_parser("neighbours", help=summary, description=NEIGHBOURS_DESCRIPTION)
    _add_neighbours(neighbours)
    summary = "the chapter's eleven exercises: predict, then check against computed values"
    exercises = views.add_parser("exercises", help=summary, description=EXERCISES_DESCRIPTION)
    _add_file_option(
        exercises,
        "--answers",
        'check the answers of a JSON file, such as {"1": [[[30, 31], ...]], "8": false}',
    )
    exercises.add_argument(
        "--reveal", action="store_true", help="print every answer with its evidence"
    )
    summary = "learn a token table from a corpus (skip-gram with negative sampling)"
    _add_train(views.add_parser("train", help=summary, description=TRAIN_DESCRIPTION))
    for view in (neighbours, exercises):
        add_language(view)


def _add_neighbours(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "words", nargs="*", metavar="WORD", help="words, each a single word piece of the table"
    )
    parser.add_argument(
        "--count",
        metavar="K",
        type=int,
        default=5,
        help="neighbours in each list, from 1 to V-1 (default: 5)",
    )
    _add_file_option(
        parser, "--table", "a safetensors file holding a [V, d] table (with --tokenizer)"
    )
    _add_file_option(parser, "--tokenizer", "the table's tokenizer.json (with --table)")
    parser.add_argument(
        "--tensor",
        metavar="NAME",
        default=None,
        help=(
            "the table's tensor name (default: embeddings.word_embeddings.weight, or "
            "token_embedding.weight, the table ch18 train writes, when the file has no tensor "
            "of the first name)"
        ),
    )
    text = "write the HTML figure to FILE instead of the text ('-': standard output)"
    _add_file_option(parser, "--figure", text)


def _add_train(parser: argparse.ArgumentParser) -> None:
    from llm_from_scratch.figures.cli import add_language
    from llm_from_scratch.training.options import TrainOptions, flag, option_fields

    defaults = TrainOptions(corpus=Path("data/corpus/shakespeare"))
    shown = {"corpus": "data/corpus/shakespeare, `make corpus`", "threads": "one per processor"}
    for name, spec, kind in option_fields():
        facts = [spec.requirement(kind)] if spec.minimum is not None or spec.choices else []
        if kind is not bool:
            facts.append(f"default: {shown.get(name, getattr(defaults, name))}")
        text = f"{spec.help} ({'; '.join(facts)})" if facts else spec.help
        if kind is bool:
            parser.add_argument(f"--{flag(name)}", action="store_true", default=SUPPRESS, help=text)
        else:
            parser.add_argument(
                f"--{flag(name)}", metavar=spec.metavar, type=kind, default=SUPPRESS, help=text
            )
    parser.add_argument(
        "--resume",
        metavar="DIR",
        type=Path,
        default=None,
        help=(
            "go on from the checkpoint in DIR (the --output of an interrupted run), with the "
            "options it was started with; an option given again must have the same value, but "
            "--threads and --checkpoint-minutes may change"
        ),
    )
    add_language(parser)
    _add_file_option(
        parser,
        "--figure",
        "after the run, also write the report's figure to FILE: one HTML page, in --lang, of the "
        "word groups projected before and after training (its folder must exist)",
    )


def _add_file_option(parser: argparse.ArgumentParser, flag: str, text: str) -> None:
    parser.add_argument(flag, metavar="FILE", type=Path, default=None, help=text)


def _add_bench(commands: _Subcommands) -> None:
    summary = "benchmarks (timings, not tests)"
    description = "Benchmarks that print medians and ratios measured side by side in one run."
    bench = commands.add_parser("bench", help=summary, description=description)
    targets = bench.add_subparsers(dest="target", metavar="TARGET", required=True)
    for name, (summary, description, options) in BENCHES.items():
        target = targets.add_parser(name, help=summary, description=description)
        for option, settings in options:
            target.add_argument(option, **settings)


def add_fixture_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--ids`` and ``--upstream`` to a ``ch18`` parser (absent unless given, so that
    ``ch18 --ids ... trace`` and ``ch18 trace --ids ...`` both work)."""
    parser.add_argument("--ids", metavar="JSON", default=argparse.SUPPRESS, help=IDS_HELP)
    parser.add_argument("--upstream", metavar="JSON", default=argparse.SUPPRESS, help=UPSTREAM_HELP)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return its exit status.

    Whatever a command raises ends as one line on standard error and a status
    (:func:`llm_from_scratch.exits.run_command`); only argparse's ``SystemExit`` (``--help``, a
    usage error) passes through.
    """
    words = sys.argv[1:] if argv is None else list(argv)
    return run_command(lambda: _run(words), debug=_debug_asked(words), words=words)


def _debug_asked(words: Sequence[object]) -> bool:
    """Whether ``--debug`` is among the options before the command."""
    for word in words:
        if word == "--debug":
            return True
        if not (isinstance(word, str) and word.startswith("-")):
            return False
    return False


def _run(words: list[str]) -> int:
    problem = _word_problem(words)
    if problem is not None:
        return _fail(problem)
    args = build_parser().parse_args(words)
    if args.command == "ch18":
        return _run_ch18(args)
    import importlib  # a benchmark's module, imported only when it runs

    bench = importlib.import_module(f"llm_from_scratch.bench.{BENCH_MODULES[args.target]}")
    options = {k: v for k, v in vars(args).items() if k not in ("debug", "command", "target")}
    status: int = bench.run(**options)
    return status


def _word_problem(words: Sequence[object]) -> str | None:
    """Why a word of the command line is not text (files.check_text), or None."""
    for number, word in enumerate(words, start=1):
        if not isinstance(word, str):
            return f"command-line word {number} is not text: {type(word).__name__} {word!r}"
        try:
            check_text(word)
        except ValueError as error:
            detail = "a byte that is not UTF-8 arrives as one"
            return f"command-line word {number}, {word!r}, is not text: {error} ({detail})"
    return None


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


def _repeats(what: str, default: int) -> tuple[str, dict[str, Any]]:
    return "--repeats", {"type": int, "default": None, "help": f"{what} (default {default})"}


#: Each benchmark's help, description and options.
TRAIN_BENCH_TRAINERS: Final = ("hogbatch", "pairs", "gensim", "gensim-file", "torch")
"""``bench train``'s trainers (``llm_from_scratch.bench.train.TRAINERS``, not imported: the
command line loads no benchmark before it runs)."""
BENCHES: Final[dict[str, tuple[str, str, list[tuple[str, dict[str, Any]]]]]] = {
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
            ("--repeats", {"type": int, "default": None,
                           "help": "timed repetitions per measurement"}),
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
            ("--corpus", {"metavar": "FILE", "type": Path, "default": None,
                          "help": "the corpus (default: the fetched Shakespeare texts)"}),
            ("--epochs", {"type": int, "default": 5, "help": "passes over the corpus (default 5)"}),
            ("--repeats", {"type": int, "default": 3, "help": "rounds (default 3)"}),
            ("--copies", {"type": int, "default": 1, "help": "train on this many copies of the "
                          "corpus, as links to its files (default 1)"}),
            ("--trainers", {"type": _name_list(*TRAIN_BENCH_TRAINERS),
                            "default": TRAIN_BENCH_TRAINERS, "metavar": "LIST",
                            "help": "comma-separated from hogbatch, pairs, gensim, gensim-file, "
                            "torch (default: all)"}),
            ("--threads", {"type": _count_list, "default": (1, 2), "metavar": "LIST",
                           "help": "comma-separated thread counts (default: 1,2)"}),
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
            ("--corpus", {"metavar": "FILE", "type": Path, "default": None,
                          "help": "the corpus (default: the fetched Shakespeare texts)"}),
            ("--words", {"type": int, "default": 200_000,
                         "help": "words of the corpus to count (default 200000)"}),
            ("--line-ns", {"type": float, "default": 100.0,
                           "help": "nanoseconds to move one cache line between cores "
                           "(default 100)"}),
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
}  # fmt: skip
#: The module of ``llm_from_scratch.bench`` each benchmark runs.
BENCH_MODULES: Final = {name: name for name in BENCHES} | {"embedding": "embedding_bag"}


def _run_ch18(args: argparse.Namespace) -> int:
    given, problem = _learner_input(args)
    if problem is not None:
        return _fail(problem)
    if args.view in ("neighbours", "exercises", "train"):
        if given:
            return _fail("--ids and --upstream apply to the demo, the trace and the figure")
        return _run_learner_view(args)
    from llm_from_scratch.figures.cli import run as draw

    if args.view == "figure" and args.trace is not None:
        if given:
            return _fail("--ids and --upstream compute a fresh trace; leave them out with --trace")
        return draw(args)
    from llm_from_scratch.demos import ch18_token_embeddings as chapter

    fixture = _fixture(chapter.KNOWN_FIXTURE, given)  # the layer and the tape refuse bad input
    text = (chapter.render_demo if args.view is None else chapter.render_trace)(fixture)
    if args.view == "figure":
        return draw(args, text)
    sys.stdout.write(text)
    return 0


def _run_learner_view(args: argparse.Namespace) -> int:
    if args.view == "train":
        from llm_from_scratch.demos.ch18_token_embeddings.train_command import (
            TrainRequest,
            run_train,
        )
        from llm_from_scratch.training.options import option_fields

        given = {name: getattr(args, name) for name, _, _ in option_fields() if name in args}
        return run_train(TrainRequest(given, args.lang, args.figure, args.resume), *_streams())
    if args.view == "exercises":
        from llm_from_scratch.demos.ch18_token_embeddings.exercise_session import run_exercises

        return run_exercises(args.lang, args.answers, args.reveal, sys.stdin, *_streams())
    from llm_from_scratch.demos.ch18_token_embeddings.neighbours_command import (
        NeighboursRequest,
        run_neighbours,
    )

    files = {"table": args.table, "tokenizer": args.tokenizer, "figure": args.figure}
    words = tuple(args.words)
    request = NeighboursRequest(words, args.count, args.lang, tensor=args.tensor, **files)
    return run_neighbours(request, *_streams())


def _streams() -> tuple[TextIO, TextIO]:
    return sys.stdout, sys.stderr


def _learner_input(args: argparse.Namespace) -> tuple[dict[str, object], str | None]:
    """The ``--ids`` and ``--upstream`` a learner gave, decoded, or why one is not JSON."""
    given: dict[str, object] = {}
    for name in ("ids", "upstream"):
        text = getattr(args, name, None)
        if text is None:
            continue
        import json  # only a learner's own values need it

        try:
            given[name] = json.loads(text)
        except (ValueError, RecursionError) as error:
            return given, f"--{name} is not valid JSON: {error}"
    return given, None


def _fixture(known: Ch18Fixture, given: dict[str, object]) -> Ch18Fixture:
    """The chapter's fixture, on the learner's IDs and upstream where given."""
    if "ids" in given:
        return known.with_ids(given["ids"], given.get("upstream"))
    if "upstream" in given:
        return known.with_upstream(given["upstream"])
    return known


def _fail(message: str) -> int:
    """Report bad input as one line on standard error; exit status 2, as for a usage error."""
    print(f"error: {one_line(message)}", file=sys.stderr)
    return 2
