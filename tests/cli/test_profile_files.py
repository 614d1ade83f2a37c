"""`calibsim profile show` on tampered, hand-edited and unreadable profiles: a one-paragraph
error and a non-zero exit, never a traceback, a crash or a hang."""

from __future__ import annotations

import base64
import json
import os

import pytest

from calibsim_gui.core.calibration.profile import DIGEST_KEY, content_digest
from calibsim_gui.core.calibration.profile_builder import builtin_profile_path


def _flip_sketch_byte(d: dict) -> None:
    """Flip the byte holding the number of levels in the cosine background's sketch."""
    background = d["metrics"]["cosine"]["background"]
    data = bytearray(base64.b64decode(background["kll"]))
    data[18] ^= 0x40
    background["kll"] = base64.b64encode(bytes(data)).decode()


@pytest.mark.parametrize("recompute, message", [
    (False, "modified or damaged"),
    (True, "quantile sketch"),
])
def test_profile_show_of_a_tampered_profile_says_why_and_exits_non_zero(tmp_path, capsys, recompute, message):
    from calibsim_gui import cli

    d = json.loads(builtin_profile_path("all-MiniLM-L6-v2").read_text(encoding="utf-8"))
    _flip_sketch_byte(d)
    if recompute:
        d[DIGEST_KEY] = content_digest(d)
    path = tmp_path / "tampered.calibsim-profile"
    path.write_text(json.dumps(d))
    code = cli.main(["profile", "show", str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("calibsim: error: ") and message in err
    assert str(path) in err and "Fix: rebuild it" in err
    assert "Traceback" not in err and err.count("\n") == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_profile_show_of_a_named_pipe_is_refused_without_waiting(tmp_path, capsys):
    from calibsim_gui import cli

    fifo = tmp_path / "pipe.calibsim-profile"
    os.mkfifo(fifo)
    assert cli.main(["profile", "show", str(fifo)]) == 2
    assert "named pipe" in capsys.readouterr().err
