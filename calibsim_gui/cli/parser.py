"""The `calibsim` argument parser, assembled from the command modules a command line needs.

A command line that names a command imports that command's module alone (its imports are the
run's fixed cost); `--help`, no command or a mistyped one import them all, to list them.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType

from calibsim_gui import __version__
from calibsim_gui.cli import options

# Command -> its module in calibsim_gui.cli, with add_parser(sub) and run(args); listed in this order.
COMMANDS = {"doctor": "doctor", "models": "models", "profile": "profile", "score": "score",
            "human": "human", "compare": "compare", "evaluate": "evaluate", "diagnose": "diagnose",
            "matrix": "matrix", "neighbours": "neighbours", "search": "search",
            "threshold": "threshold", "reference-texts": "reference_texts"}


def command_module(name: str) -> ModuleType:
    """The module of command `name` (imported on first use)."""
    return importlib.import_module(f"calibsim_gui.cli.{COMMANDS[name]}")


def chosen_command(argv) -> str | None:
    """The command `argv` names (its first word that is one), or None."""
    return next((word for word in argv if word in COMMANDS), None)


def build_parser(argv=None) -> argparse.ArgumentParser:
    """The parser for `argv`: with its command's arguments alone when it names one, else all."""
    parser = argparse.ArgumentParser(
        prog="calibsim", description="Calibrated, globally interpretable embedding similarity. "
                                     "Without a command, opens the desktop app.")
    parser.add_argument("--version", action="version", version=f"calibsim {__version__}")
    parser.add_argument("--screenshot", metavar="DIR", type=options.folder,
                        help="open the app on the built-in demo, save a PNG of every main view "
                             "and timings.json into DIR, then exit")
    parser.add_argument("--self-test", action="store_true",
                        help="check offline and headless that calibsim works (model, reference, "
                             "scoring, reports, main window); exit 0 only if every step worked")
    parser.add_argument("--debug", action="store_true",
                        help="on an unexpected error, show its traceback (may also follow the command)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = None if argv is None else chosen_command(argv)
    for name in COMMANDS if chosen is None else (chosen,):
        command_module(name).add_parser(sub)
    return parser
