"""Format a training report, and the progress line, with the words of the train label table."""

from __future__ import annotations

import math

from llm_from_scratch.demos.ch18_token_embeddings.train import TableView, TrainReport
from llm_from_scratch.labels import Labels, aligned_rows, label
from llm_from_scratch.training.options import MODEL_FILE
from llm_from_scratch.training.run import ProgressState


def format_report(report: TrainReport, labels: Labels) -> str:
    """The report as text: corpus, model, training, neighbours, groups, files written."""
    options = report.options
    lines = [
        label(labels, "corpus").format(
            path=options.corpus,
            files=report.corpus_files,
            words=_count(report.words_read),
            vocabulary=_count(report.vocabulary_size),
            min_count=options.min_count,
            kept=_count(report.words_kept),
        ),
        label(labels, "model").format(
            table="token_embedding.weight",
            rows=report.vocabulary_size,
            width=options.dim,
            window=options.window,
            negatives=options.negatives,
            seed=options.seed,
            threads=options.threads,
        ),
        *_training(report, labels),
        "",
        label(labels, "neighbours"),
        *_neighbours(report, labels),
        "",
        *_groups(report.before, report.after, labels),
        "",
        label(labels, "wrote").format(
            table=report.table_path,
            tensor=f"token_embedding.weight {report.vocabulary_size}x{options.dim} float32",
            tokenizer=report.tokenizer_path,
        ),
    ]
    if options.keep_model:
        model = options.output / MODEL_FILE
        lines.append(label(labels, "kept_model").format(model=model, folder=options.output))
    return "".join(f"{line}\n" for line in lines)


def progress_line(state: ProgressState, labels: Labels) -> str:
    """``epoch 2/5  43% of the corpus  412,000 words/s  loss 2.4512  21 s left  peak 180 MB``
    in the labels' language."""
    left = state.seconds_left
    return label(labels, "progress").format(
        epoch=state.epoch,
        epochs=state.epochs,
        percent=f"{100 * state.corpus_fraction:.0f}",
        speed=_count(state.words_per_second),
        loss=_decimal(state.mean_loss),
        left="?" if math.isnan(left) else f"{left:.0f}",
        memory=_megabytes(state.peak_memory),
    )


def _training(report: TrainReport, labels: Labels) -> list[str]:
    if not report.epochs:
        return [label(labels, "no_training")]
    first, last = report.learning_rates
    lines = [
        label(labels, "training").format(
            epochs=len(report.epochs),
            method=label(labels, f"method_{report.options.method}"),
            first=f"{first:g}",
            last=f"{last:g}",
            seconds=f"{report.training_seconds:.1f}",
            speed=_count(report.words_per_second),
            memory=_megabytes(report.peak_memory),
            norm=f"{report.largest_row_norm:.2f}",
        )
    ]
    if report.resumed:
        lines.append(label(labels, "resumed"))
    origin = report.origin
    if origin.folder is not None:
        lines.append(
            label(labels, "continued").format(
                folder=origin.folder,
                before=origin.first_epoch,
                outside=_count(origin.outside_words),
                distinct=_count(origin.outside_distinct),
            )
        )
    header = [label(labels, "epoch_header", key) for key in ("epoch", "pairs", "loss", "seconds")]
    table = [header] + [
        [str(epoch.epoch), _count(epoch.pairs), _decimal(epoch.mean_loss), f"{epoch.seconds:.1f}"]
        for epoch in report.epochs
    ]
    return lines + ["  " + line for line in aligned_rows(table, numeric=(0, 1, 2, 3))]


def _neighbours(report: TrainReport, labels: Labels) -> list[str]:
    before = label(labels, "before")
    after = label(labels, "after")
    width = max(len(before), len(after))
    lines = []
    for old, new in zip(report.before.neighbours, report.after.neighbours, strict=True):
        lines.append(old.word)
        for name, found in ((before, old), (after, new)):
            listed = ", ".join(
                f"{neighbour.token} {neighbour.cosine:.2f}" for neighbour in found.vector_neighbours
            )
            lines.append(f"  {name.ljust(width)}  {listed}")
    return lines


def _groups(before: TableView, after: TableView, labels: Labels) -> list[str]:
    if not before.groups:
        return [label(labels, "no_groups")]
    names = (label(labels, "before"), label(labels, "after"))
    header = [
        label(labels, "group_header", "group"),
        *(
            f"{label(labels, 'group_header', kind)} ({name})"
            for name in names
            for kind in ("inside", "between")
        ),
        label(labels, "group_header", "words"),
    ]
    table = [header]
    for old, new in zip(before.groups, after.groups, strict=True):
        cosines = _decimals(old.within, old.between, new.within, new.between)
        table.append([label(labels, "group_names", old.group), *cosines, ", ".join(old.words)])
    cosines = _decimals(before.within, before.between, after.within, after.between)
    table.append([label(labels, "all_groups"), *cosines, ""])
    separation = label(labels, "group_header", "separation")
    summary = (
        f"{separation}: {names[0]} {_decimal(before.separation)}, "
        f"{names[1]} {_decimal(after.separation)}"
    )
    return [
        label(labels, "groups"),
        *("  " + line for line in aligned_rows(table, (1, 2, 3, 4))),
        summary,
    ]


def _decimals(*values: float) -> list[str]:
    return [_decimal(value) for value in values]


def _megabytes(value: int) -> str:
    return f"{value / 2**20:,.0f}"


def _count(value: float) -> str:
    return "?" if math.isnan(value) else f"{round(value):,}"


def _decimal(value: float) -> str:
    return "?" if math.isnan(value) else f"{value:.4f}"
