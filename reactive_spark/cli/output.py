"""The command's terminal, its stderr through rich, and the progress bars drawn on it.

Progress bars, the log and error lines share it, so that a bar stays below what is printed.
"""

from __future__ import annotations

from rich.console import Console as Terminal
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

terminal = Terminal(stderr=True)


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
