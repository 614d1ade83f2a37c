"""Calibrated reports: one `Report`, written as HTML, PDF, XLSX, JSON, CSV/TSV, or figures alone.

Every report the app or the CLI writes (File ▸ Export, the Search tab's Export, ``--out``) goes
through `write_report_files`; every file is written to a temporary name and renamed into place,
so a failure never leaves half a report.

May import every other package of `calibsim_gui.core` (reports are the top layer).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from calibsim_gui.core.errors import Cancelled, InputError
from calibsim_gui.core.io.atomic import atomic_path, atomic_paths, write_text_atomic
from calibsim_gui.core.io.output import (
    FIGURE_FORMATS,
    REPORT_FORMATS,
    TABLE_SUFFIXES,
    check_output_path,
    dump_json,
    figure_path,
    figure_paths,
    write_matrix,
    write_scored_pairs,
)
from calibsim_gui.core.reports import html, pdf, tables
from calibsim_gui.core.reports.content import Report, build_report
from calibsim_gui.core.reports.reproduce import anchors_path

__all__ = ["FIGURE_FORMATS", "REPORT_FORMATS", "Report", "build_report", "figure_paths",
           "write_figures", "write_report", "write_report_files"]


def _no_progress(done: int, total: int, message: str) -> None:
    pass


def _stopper(should_stop):
    def check() -> None:
        if should_stop is not None and should_stop():
            raise Cancelled("export stopped; nothing was written")
    return check


def write_report(report: Report, path, *, force: bool = False, inputs=(), progress=None,
                 should_stop=None, keep_formulas: bool = False) -> Path:
    """Write `report` in the format named by `path`'s extension (see `REPORT_FORMATS`).

    Refuses to replace an input or (without `force`) an existing file. CSV/TSV hold the table
    (a document set: the featured form's square matrix) plus ``<out>.provenance.json``; their
    formula-like texts get a leading ``'`` unless `keep_formulas` (see `protect_formulas`).
    A stop request (`should_stop()` true) raises `Cancelled` and leaves no file; a write the
    system refuses raises `WriteError` and leaves every previous file as it was.

    The Reproduce commands name files relative to `path` (`reproduce.command_path`).
    A report whose references use a ladder other than the built-in one (edited anchors) also
    writes that ladder as ``<report stem>-anchors.json`` beside it, which its Reproduce commands
    name with ``--anchors``; the HTML, PDF, XLSX and JSON formats hold those commands.
    """
    path = check_output_path(path, inputs=inputs, force=force)
    progress = progress or _no_progress
    check = _stopper(should_stop)
    suffix = path.suffix.lower()
    progress(0, 3, f"writing {path.name}")
    report.path = path                        # the Reproduce commands' paths are relative to it
    ladder = None
    if report.custom_anchors and suffix in (".html", ".pdf", ".xlsx", ".json"):
        ladder = report.anchors_file = anchors_path(path)     # named by the Reproduce commands
        if any(Path(i).resolve() == ladder.resolve() for i in inputs):
            ladder = None                     # the ladder this run read (a Reproduce run): kept
        else:
            check_output_path(ladder, inputs=inputs, force=True, formats=None)
    if suffix in (".html", ".pdf"):
        progress(1, 3, "drawing figures")
        report.figures          # drawn before the write, whose OSErrors are about the output file
        check()
    if suffix in TABLE_SUFFIXES:
        result = dataclasses.replace(report.result, provenance=report.provenance)   # side-car: files by role
        if report.kind != "matrix":          # scored pairs, search hits: one row each
            write_scored_pairs(result, path, keep_formulas=keep_formulas)
        else:
            matrices = result.matrices       # the featured form, else the one it was scored with
            form = report.form if report.form in matrices else next(
                (f for f in matrices if f != "raw"), "raw")
            write_matrix(result, path, form=form, keep_formulas=keep_formulas)
    elif suffix == ".json":
        write_text_atomic(path, tables.report_json(report))
    elif suffix == ".html":
        progress(2, 3, "writing HTML")
        write_text_atomic(path, html.render_html(report))
    else:
        with atomic_path(path) as tmp:
            if suffix == ".xlsx":
                tables.write_xlsx(report, tmp)
            else:
                pdf.render_pdf(report, tmp, progress=progress, check=check)
    if ladder is not None:
        write_text_atomic(ladder, dump_json(report.profile.anchors.to_dict()))
    progress(3, 3, f"wrote {path.name}")
    return path


def write_figures(report: Report, path, *, force: bool = False) -> list[Path]:
    """Write each figure beside `path` as ``<stem>-<figure>.png`` and ``.svg``; returns the files.

    The files are replaced together: if one cannot be written, none is.
    """
    targets = [(figure, figure_path(path, figure.name, suffix))
               for figure in report.figures for suffix in FIGURE_FORMATS]
    existing = [t for _, t in targets if t.exists()]
    if existing and not force:
        raise InputError("a figure file exists already.", path=existing[0],
                         fix="choose another name, or add --force to replace it")
    with atomic_paths(*(target for _, target in targets)) as temporaries:
        for (figure, target), tmp in zip(targets, temporaries):
            if target.suffix == ".svg":
                tmp.write_text(figure.svg, encoding="utf-8")
            else:
                tmp.write_bytes(figure.png)
    return [t for _, t in targets]


def write_report_files(report: Report, path, *, figures: bool, force: bool = False, progress=None,
                       should_stop=None, inputs=None, keep_formulas: bool = False) -> list[Path]:
    """`write_report`, then (`figures`) `write_figures` beside it; returns the files written, the
    report first. `inputs` (default: the report's input files) are never replaced."""
    written = write_report(report, path, force=force, progress=progress, should_stop=should_stop,
                           inputs=report.input_files if inputs is None else inputs,
                           keep_formulas=keep_formulas)
    return [written, *(write_figures(report, written, force=force) if figures else [])]
