"""calibsim's command line. With no sub-command it opens the desktop app.

Sub-commands are headless and never import Qt. Each lives in its own module (`score`,
`matrix`, ...) with its arguments (`add_parser`) and its code (`run`); `parser` assembles
the ones a command line needs (a run imports its own command's module alone), `options` holds
the options several commands share and `common` what they share when they run. Core modules that load numpy, pandas or torch are imported inside the functions that
need them, so that `calibsim --help` and `calibsim doctor` start without them.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
import warnings
from pathlib import Path

from calibsim_gui.cli.parser import COMMANDS, build_parser, command_module
from calibsim_gui.core.errors import explain

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
    """Run the command line; the exit status: 0 done, 2 refused with a message, 3 a bug, 130
    stopped by Ctrl+C, 143 by SIGTERM.

    Every failure of a sub-command ends here. One a user can fix (`explain`) is one paragraph
    naming the file and the fix; any other is "unexpected error", its traceback shown with
    --debug (anywhere on the line). A reader of stdout that went away (``| head``) ends the run
    quietly, as `cat` does.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    end = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:end]
    argv = [word for word in argv[:end] if word != "--debug"] + argv[end:]
    files, argv = _app_files(argv, COMMANDS)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if files and (args.self_test or args.screenshot):
        parser.error("files to open go with the app alone, not with --self-test or --screenshot")
    if args.self_test:
        from calibsim_gui.selftest import run_self_test  # the socket guard and steps of one option

        return run_self_test()
    if args.command is None:
        from calibsim_gui.qt.shell.app import run_app  # Qt loads for the window alone

        return run_app(screenshot_dir=args.screenshot, files=files)
    previous = _stop_on_sigterm()
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _print_warning
            return command_module(args.command).run(args)
    except Terminated:
        print("calibsim: stopped by SIGTERM", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("calibsim: stopped by the user", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_gone()
    except Exception as exc:  # noqa: BLE001 - the one place every failure becomes a message
        return _report_failure(exc, args, debug=debug)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is as Ctrl+C is: its `finally` blocks run (temporary
    files go, a Ray instance shuts down) and nothing is written."""


def _terminate(signum, frame):
    raise Terminated


def _stop_on_sigterm():
    """Turn SIGTERM into `Terminated` (in the main thread only); the handler it replaced."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _terminate)


EXIT_READER_GONE = 141      # 128 + SIGPIPE: the status a shell gives `cat` in `cat FILE | head -1`
INPUT_ARGUMENTS = ("pairs", "inputs", "queries", "profiles", "profile", "background", "corpus",
                   "anchors", "human")


def _report_failure(exc: Exception, args, *, debug: bool) -> int:
    """Print `exc` as calibsim's message (exit 2) or, for a bug, as "unexpected error" (exit 3)."""
    files = [value for name in INPUT_ARGUMENTS
             for value in _as_list(getattr(args, name, None)) if isinstance(value, (str, Path))]
    message = explain(exc, files=files)
    if debug:
        traceback.print_exc()
    if message is not None:
        print(f"calibsim: error: {message}", file=sys.stderr)
        return 2
    print(f"calibsim: unexpected error (a bug in calibsim): {type(exc).__name__}: {exc}. "
          + ("The traceback is above; please report it with the command that led to it."
             if debug else "Run the same command again with --debug to see the traceback, and "
                           "report it with the command."), file=sys.stderr)
    return 3


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _reader_gone() -> int:
    """stdout's reader closed the pipe (``| head -1``): stop without a word, as `cat` does, and
    keep Python from failing again when it flushes stdout on exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):    # stdout is not a file (e.g. captured in a test)
        pass
    return EXIT_READER_GONE


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings (e.g. the embedding cache turned itself off) as one line, like errors."""
    print(f"calibsim: warning: {message}", file=sys.stderr)
