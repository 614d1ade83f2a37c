"""CI's skip check (.ci/check_skips.py), on the JUnit XML of a tiny pytest session: a test skipped
for a reason not on its allow-list, or a check CI must run that did not pass, fails CI."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKER = ROOT / ".ci" / "check_skips.py"
TINY = """
import pytest


@pytest.mark.skipif(True, reason="chmod cannot lock root out (the core test fakes it)")
def test_allowed():
    pass


@pytest.mark.skipif({unexpected}, reason="No module named 'IsoScore'")
def test_compared_with_the_reference():
    pass


@pytest.mark.parametrize("k", [1, 2])
def test_each(k):
    pass


class TestGroup:
    def test_in_a_class(self):
        pass
"""
MUST_RUN = ("test_tiny.py::test_compared_with_the_reference", "test_tiny.py::test_each[2]",
            "test_tiny.py::TestGroup::test_in_a_class")


@pytest.fixture(scope="module", params=[False, True], ids=["allowed skip", "unexpected skip"])
def report(request, tmp_path_factory):
    """The JUnit XML of the tiny session, with (param True) or without an unexpected skip."""
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "test_tiny.py").write_text(TINY.format(unexpected=request.param))
    xml = folder / "junit.xml"
    environ = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}    # CI's report is not this
    environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"                               # a plain session starts fast
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
                          "test_tiny.py"], cwd=folder, env=environ, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:]
    return request.param, xml


def check(xml, *must_run):
    return subprocess.run([sys.executable, str(CHECKER), str(xml), *must_run], capture_output=True, text=True,
                          timeout=300)


def test_an_unexpected_skip_fails_ci_and_an_allowed_one_does_not(report):
    unexpected, xml = report
    result = check(xml, *MUST_RUN[1:])
    assert "allowed: test_tiny::test_allowed: chmod cannot lock root out" in result.stdout
    if unexpected:
        assert result.returncode == 1
        assert ("test_tiny::test_compared_with_the_reference was skipped: No module named 'IsoScore' "
                "(not on .ci/check_skips.py's ALLOWED)") in result.stderr
        assert "NOT ALLOWED: test_tiny::test_compared_with_the_reference" in result.stdout
    else:
        assert result.returncode == 0, result.stderr
        assert "5 tests, 1 skipped" in result.stdout and result.stderr == ""


def test_the_checks_ci_must_run_are_named_and_fail_ci_unless_they_passed(report):
    unexpected, xml = report
    result = check(xml, *MUST_RUN)
    outcome = "skipped" if unexpected else "passed"
    assert f"must run: {MUST_RUN[0]}: {outcome}" in result.stdout
    assert all(f"must run: {node}: passed" in result.stdout for node in MUST_RUN[1:])
    assert result.returncode == (1 if unexpected else 0)
    missing = check(xml, "test_tiny.py::test_allowed", "test_tiny.py::test_gone")
    assert missing.returncode == 1
    assert "test_tiny.py::test_allowed must run and pass in CI, but was skipped: chmod cannot" in missing.stderr
    assert "test_tiny.py::test_gone must run and pass in CI, but was not run" in missing.stderr


def test_ci_checks_the_report_of_make_test_and_names_tests_that_exist():
    script = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in script                           # a failed check stops CI
    make = script.index('PYTEST_ADDOPTS="--junitxml=$report/junit.xml" make test')
    assert script.index('.ci/check_skips.py "$report/junit.xml"') > make
    must_run = re.findall(r"^  (tests/\S+\.py)::(\w+)", script, re.MULTILINE)
    assert len(must_run) == 3
    for path, name in must_run:
        assert f"def {name}(" in (ROOT / path).read_text(), f"{path}::{name}"
