"""The HTML report in headless Chromium: it renders, and the page asks the network for nothing.

Chromium is driven over its DevTools pipe: the requests counted are those the page's own
Network domain reports (what the document and its resources asked for), never the browser's
own service calls. Background networking and component updates are off, and every host name
resolves to nothing, so no request leaves the machine. A control page with one remote image
proves the check sees a page's request. Skipped where Chromium is not installed (CI installs it).
"""

import base64
import io
import itertools
import json
import os
import select
import shutil
import subprocess

import numpy as np
import pytest

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.reports import build_report, write_report
from tests.fakes import FakeEmbedder, random_sentences

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
QUIET = ("--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-domain-reliability", "--no-pings",
         "--disable-client-side-phishing-detection", "--disable-features=OptimizationHints,Translate,MediaRouter",
         "--host-resolver-rules=MAP * ~NOTFOUND")
ANSWER_S = 120            # a browser silent this long is stuck (a bound, not a pace)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium; CI installs it)")


class Browser:
    """Headless Chromium over --remote-debugging-pipe (it reads fd 3, writes fd 4: JSON + NUL)."""

    def __init__(self):
        into_read, self._into = os.pipe()
        self._out, out_write = os.pipe()
        command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   *QUIET, "--remote-debugging-pipe", "about:blank"]
        self.process = subprocess.Popen(         # bash: sh redirects only one-digit descriptors
            ["bash", "-c", f'exec "$@" 3<&{into_read} 4>&{out_write}', "bash", *command],
            pass_fds=(into_read, out_write), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(into_read)
        os.close(out_write)
        self._ids, self._pending, self.events = itertools.count(1), b"", []

    def send(self, method, session=None, **params) -> dict:
        message_id = next(self._ids)
        message = {"id": message_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._into, json.dumps(message).encode() + b"\0")
        answer = self._next(lambda m: m.get("id") == message_id)
        assert "error" not in answer, f"{method}: {answer['error']}"
        return answer["result"]

    def _next(self, wanted) -> dict:
        """Read messages until one is `wanted`; the others are kept as events."""
        while True:
            while b"\0" not in self._pending:
                ready, _, _ = select.select([self._out], [], [], ANSWER_S)
                chunk = os.read(self._out, 1 << 20) if ready else b""
                assert chunk, "Chromium stopped answering"
                self._pending += chunk
            raw, self._pending = self._pending.split(b"\0", 1)
            message = json.loads(raw)
            if wanted(message):
                return message
            self.events.append(message)

    def open(self, page, width=1300, height=1600) -> str:
        """Load `page` in a new tab and wait until its network is idle; returns the tab's session."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for method in ("Page.enable", "Network.enable"):
            self.send(method, session)
        self.send("Page.setLifecycleEventsEnabled", session, enabled=True)
        self.send("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        loader = self.send("Page.navigate", session, url=page.as_uri())["loaderId"]
        idle = lambda m: (m.get("method") == "Page.lifecycleEvent" and m["params"]["name"] == "networkIdle"
                          and m["params"]["loaderId"] == loader)
        if not any(idle(m) for m in self.events):
            self._next(idle)
        return session

    def page_requests(self, session, page) -> list[str]:
        """URLs the page asked for, other than itself and inline data."""
        urls = [m["params"]["request"]["url"] for m in self.events
                if m.get("sessionId") == session and m.get("method") == "Network.requestWillBeSent"]
        return [u for u in urls if u != page.as_uri() and not u.startswith("data:")]

    def close(self):
        try:
            self.send("Browser.close")
        except (AssertionError, OSError):        # it may leave before answering
            pass
        try:
            self.process.wait(timeout=ANSWER_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._into)
        os.close(self._out)


@pytest.fixture
def browser():
    chromium = Browser()
    yield chromium
    chromium.close()


@pytest.fixture(scope="module")
def html_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser")
    pairs = folder / "pairs.csv"
    texts = random_sentences(40, seed=2)
    pairs.write_text("sentence1,sentence2\n" + "\n".join(f"{a},{b}" for a, b in zip(texts, texts[::-1])))
    profile = build_profile(FakeEmbedder(), random_sentences(1500, seed=1), ProfileSettings(n_pairs=1000))
    scored = score_pairs(load_pairs(pairs), FakeEmbedder(), profile)
    return write_report(build_report(scored, profile), folder / "report.html")


def test_report_renders_with_summary_table_and_figure_and_no_network(html_report, browser):
    session = browser.open(html_report)
    dom = browser.send("Runtime.evaluate", session, expression="document.documentElement.outerHTML",
                       returnByValue=True)["result"]["value"]
    assert 'id="summary"' in dom and "Model fingerprint" in dom
    assert dom.count("<tr>") > 40 and "data:image/png;base64," in dom
    shot = base64.b64decode(browser.send("Page.captureScreenshot", session, format="png")["data"])
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(shot)).convert("L"))
    assert pixels.shape == (1600, 1300) and pixels.std() > 20, "the page is not blank"
    assert browser.page_requests(session, html_report) == []


def test_the_check_sees_a_page_that_does_fetch(tmp_path, browser):
    page = tmp_path / "control.html"
    page.write_text('<html><body><img src="http://calibsim-control.example/x.png"></body></html>')
    session = browser.open(page)
    assert browser.page_requests(session, page) == ["http://calibsim-control.example/x.png"]
