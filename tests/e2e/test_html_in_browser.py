"""The HTML report in headless Chromium: it renders, and the page asks the network for nothing.

Chromium's requests go through a recording proxy. The browser's own service calls (Google
hosts) are told apart from the page's; a control page with one remote image proves the check
sees a page's request. Skipped where Chromium is not installed (CI installs it).
"""

import shutil
import socket
import subprocess
import threading

import numpy as np
import pytest

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.reports import build_report, write_report
from tests.fakes import FakeEmbedder, random_sentences

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
BROWSER_SERVICE_HOSTS = ("google.com", "gvt1.com", "googleapis.com/chrome-variations", "gstatic.com")

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed")


class RecordingProxy:
    """A proxy that records the first line of every request and answers nothing."""

    def __init__(self):
        self.requests: list[str] = []
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                line = conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
                self.requests.append(line)

    def page_requests(self) -> list[str]:
        """Requests for hosts other than the browser's own services (empty preconnects ignored)."""
        return [r for r in self.requests
                if r.strip() and not any(host in r for host in BROWSER_SERVICE_HOSTS)]


def chromium(page, *args, proxy):
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update",
         f"--proxy-server=http://127.0.0.1:{proxy.port}", "--proxy-bypass-list=<-loopback>",
         *args, page.as_uri()], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def html_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser")
    pairs = folder / "pairs.csv"
    texts = random_sentences(40, seed=2)
    pairs.write_text("sentence1,sentence2\n" + "\n".join(f"{a},{b}" for a, b in zip(texts, texts[::-1])))
    profile = build_profile(FakeEmbedder(), random_sentences(1500, seed=1), n_pairs=1000)
    scored = score_pairs(load_pairs(pairs), FakeEmbedder(), profile)
    return write_report(build_report(scored, profile), folder / "report.html")


def test_report_renders_with_summary_table_and_figure_and_no_network(html_report, tmp_path):
    proxy = RecordingProxy()
    dom = chromium(html_report, "--dump-dom", proxy=proxy).stdout
    assert 'id="summary"' in dom and "Model fingerprint" in dom
    assert dom.count("<tr>") > 40 and "data:image/png;base64," in dom
    shot = tmp_path / "shot.png"
    chromium(html_report, "--window-size=1300,1600", f"--screenshot={shot}", proxy=proxy)
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("L"))
    assert pixels.std() > 20, "the page is not blank"
    assert proxy.page_requests() == []


def test_the_check_sees_a_page_that_does_fetch(tmp_path):
    page = tmp_path / "control.html"
    page.write_text('<html><body><img src="http://calibsim-control.example/x.png"></body></html>')
    proxy = RecordingProxy()
    chromium(page, "--dump-dom", proxy=proxy)
    assert any("calibsim-control.example" in r for r in proxy.page_requests())
