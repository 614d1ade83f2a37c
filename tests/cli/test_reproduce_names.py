"""A Reproduce command names any input file so that the command line reads it as a file (#42)."""

import shlex

from calibsim_gui.cli.parser import build_parser
from calibsim_gui.core.reports.reproduce import command_path


def test_a_file_named_like_an_option_is_named_so_the_command_reads_it_as_a_file(tmp_path):
    report = tmp_path / "report.html"
    named = [command_path(tmp_path / name, report) for name in ("-q.csv", "--help.csv", "a b.csv")]
    assert named == ["./-q.csv", "./--help.csv", "a b.csv"]
    args = build_parser().parse_args(shlex.split(shlex.join(["score", named[0], "--out", "again.html"])))
    assert args.pairs == "./-q.csv"
