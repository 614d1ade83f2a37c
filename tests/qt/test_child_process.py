"""The app's child process (reports, the Space diagnosis) ends with the app, even when the app is
killed: an app that crashed must not leave a process behind (#29)."""

import signal
import subprocess
import sys
import textwrap
import time

import pytest

KILLED_APP = textwrap.dedent("""
    import multiprocessing, os, signal
    from calibsim_gui.qt.widgets.child_process import child_process
    child_process().warm_up()
    print(*[process.pid for process in multiprocessing.active_children()], flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


def running(pid: int) -> bool:
    """Whether `pid` is a live process (an exited one nobody reaped yet is a zombie: not running)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return "\nState:\tZ" not in status.read()
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_child_process_ends_when_the_app_is_killed():
    app = subprocess.run([sys.executable, "-c", KILLED_APP], capture_output=True, text=True, timeout=300,
                         check=False)
    assert app.returncode == -signal.SIGKILL, app.stderr[-2000:]
    [child] = [int(pid) for pid in app.stdout.split()]
    deadline = time.monotonic() + 300              # a bound for a loaded machine, not a timing
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running(child), "the child process outlived the killed app"
