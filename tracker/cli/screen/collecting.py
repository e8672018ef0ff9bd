"""A collection on screen: per-provider progress on a terminal, then the run summary.

Imported by the commands that collect (`collect`, `demo`) when they run: it brings the pipeline,
and through it the store's write path, which no read-only command needs.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from tracker.cli.screen import render
from tracker.collecting import pipeline
from tracker.config import Config


class RichReporter(pipeline.Reporter):
    """Per-provider progress (pages fetched, records) while collecting."""

    def __init__(self, progress: Progress) -> None:
        self.bar = progress
        self.tasks: dict[str, TaskID] = {}

    def started(self, provider: str) -> None:
        self.tasks[provider] = self.bar.add_task(provider, total=None, pages=0, items=0)

    def progress(self, provider: str, pages: int, items: int) -> None:
        self.bar.update(self.tasks[provider], pages=pages, items=items)

    def finished(self, outcome: pipeline.Outcome) -> None:
        task = self.tasks[outcome.provider]
        self.bar.update(
            task, total=1, completed=1, description=f"{outcome.provider} {outcome.status}"
        )


def run_collection(
    console: Console,
    config: Config,
    names: tuple[str, ...],
    env: Mapping[str, str],
    *,
    accept_suspect: bool = False,
) -> list[pipeline.Outcome]:
    """Collect `names` (every enabled provider when empty), drawing progress on a terminal,
    then print the summary and one line per skipped or held provider."""
    if console.is_terminal:
        with _progress(console) as bar:
            outcomes = pipeline.collect(
                config,
                names,
                env=env,
                reporter=RichReporter(bar),
                accept_suspect=accept_suspect,
            )
    else:  # a log file or a pipe: no live display, the summary says it all
        outcomes = pipeline.collect(config, names, env=env, accept_suspect=accept_suspect)
    console.print(render.summary(outcomes))
    for outcome in outcomes:
        if outcome.status == "skipped":
            console.print(f"[yellow]{outcome.provider} skipped:[/] {escape(outcome.error or '')}")
        elif outcome.status == "held":  # one line, whole: the rule and its counts
            line = f"{outcome.error}; `gpu-tracker collect --accept-suspect` applies it"
            console.print(
                f"[bold yellow]{outcome.provider} held:[/] {escape(line)}", soft_wrap=True
            )
    return outcomes


def _progress(console: Console) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description:<16}"),
        BarColumn(),
        TextColumn("{task.fields[pages]} pages, {task.fields[items]} items"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
