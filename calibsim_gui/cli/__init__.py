"""calibsim's command line. With no sub-command it opens the desktop app.

Sub-commands are headless and never import Qt. Each lives in its own module (`score`,
`matrix`, ...) with its arguments (`add_parser`) and its code (`run`); `parser` assembles
them, `options` holds the options several commands share and `common` what they share when
they run. Core modules that load numpy, pandas or torch are imported inside the functions that
need them, so that `calibsim --help` and `calibsim doctor` start without them.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from calibsim_gui.cli.parser import COMMANDS, build_parser
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.selftest import run_self_test

APP_FILE_SUFFIXES = {".csv", ".tsv", ".tab", ".jsonl", ".ndjson", ".txt", ".md", ".calibsim"}


def _app_files(argv: list[str], commands) -> tuple[list[str], list[str]]:
    """Split ``calibsim [options] FILE...`` (open files in the app) from a sub-command line.

    A positional word that is not a sub-command counts as a file when it exists or ends like
    a file the app opens; anything else is left to argparse (so a mistyped command still
    gets "invalid choice"). Returns (files, the other arguments).
    """
    files, rest, i = [], [], 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            files += argv[i + 1:]
            break
        if word.startswith("-") and len(word) > 1:
            rest.append(word)
            if word == "--screenshot" and i + 1 < len(argv):     # its value is not a file
                rest.append(argv[i + 1])
                i += 1
        elif word in commands:
            return [], list(argv)             # a sub-command: argparse reads the whole line
        elif Path(word).exists() or Path(word).suffix.lower() in APP_FILE_SUFFIXES:
            files.append(word)
        else:
            rest.append(word)
        i += 1
    return files, rest


def main(argv=None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    files, argv = _app_files(argv, COMMANDS)
    args = parser.parse_args(argv)
    if files and (args.self_test or args.screenshot):
        parser.error("files to open go with the app alone, not with --self-test or --screenshot")
    if args.self_test:
        return run_self_test()
    if args.command is None:
        from calibsim_gui.qt.app import run_app  # Qt loads for the window alone

        return run_app(screenshot_dir=args.screenshot, files=files)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _print_warning
            return COMMANDS[args.command].run(args)
    except CalibsimError as exc:
        print(f"calibsim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("calibsim: stopped by the user", file=sys.stderr)
        return 130


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings (e.g. the embedding cache turned itself off) as one line, like errors."""
    print(f"calibsim: warning: {message}", file=sys.stderr)
