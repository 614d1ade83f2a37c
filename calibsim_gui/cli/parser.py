"""The `calibsim` argument parser, assembled from each command's module."""

from __future__ import annotations

import argparse

from calibsim_gui import __version__
from calibsim_gui.cli import (
    compare,
    diagnose,
    doctor,
    evaluate,
    human,
    matrix,
    models,
    neighbours,
    options,
    profile,
    score,
    search,
    threshold,
)

# Each command's module has add_parser(sub) and run(args); the parser lists them in this order.
COMMANDS = {"doctor": doctor, "models": models, "profile": profile, "score": score, "human": human,
            "compare": compare, "evaluate": evaluate, "diagnose": diagnose, "matrix": matrix,
            "neighbours": neighbours, "search": search, "threshold": threshold}


def build_parser() -> argparse.ArgumentParser:
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
    for command in COMMANDS.values():
        command.add_parser(sub)
    return parser
