"""``llm-from-scratch bench startup``: the chapter demo's process time against importing NumPy,
fresh processes of the same interpreter taking turns (:mod:`~llm_from_scratch.bench.rounds`)."""

from __future__ import annotations

from collections.abc import Sequence

from llm_from_scratch.bench.rounds import DEMO_COMMAND, NUMPY_COMMAND, process_report, run_processes

COMMANDS = {"python -c 'import numpy'": NUMPY_COMMAND, "llm-from-scratch ch18": DEMO_COMMAND}


def format_result(medians: Sequence[float], runs: int) -> str:
    """Both medians and their ratio."""
    numpy_import, demo = medians
    return process_report(
        dict(zip(COMMANDS, medians, strict=True)),
        {"ratio demo / import numpy": demo / numpy_import},
        runs,
    )


def run(repeats: int) -> int:
    """Measure and print, ``repeats`` runs of each process."""
    return run_processes(COMMANDS, repeats, format_result)
