"""The command's terminal, its stderr through rich, and the progress bars drawn on it.

Progress bars, the log and error lines share it, so that a bar stays below what is printed.
"""

from __future__ import annotations

import logging
import time

from rich.console import Console as Terminal
from rich.logging import RichHandler
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

terminal = Terminal(stderr=True)


def print_error(message: str) -> None:
    """`message` as one red line on stderr: never wrapped, never read as markup.

    A job's failure may hold anything (`[/b]` in it would make rich raise), and outside a
    terminal a wrapped line could not be found with grep.
    """
    terminal.print(message, style="red", markup=False, highlight=False, soft_wrap=True)


def log_handler() -> logging.Handler:
    """Where the log goes: rich's columns on a terminal, else a line per record.

    Outside a terminal (a file, journald, `kubectl logs`) each record starts a line of its own
    with its UTC time (a traceback follows it), so a batch can be found with grep; rich would
    wrap it at 80 columns.
    """
    if terminal.is_terminal:
        return RichHandler(console=terminal, show_path=False)
    handler = logging.StreamHandler()  # stderr, as the terminal's
    formatter = logging.Formatter(
        "%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S"
    )
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    return handler


def progress_bar(title: str, *details: ProgressColumn) -> Progress:
    """A progress bar on the terminal: `title`, the bar, done of total, `details`, time taken."""
    return Progress(
        TextColumn(f"[bold]{title}"),
        BarColumn(),
        MofNCompleteColumn(),
        *details,
        TimeElapsedColumn(),
        console=terminal,
    )
