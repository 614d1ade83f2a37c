"""`calibsim --screenshot DIR` with the real built-in model: every main view is saved."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow
VIEWS = ("first_run", "model_manager", "anchor_editor", "background_loader", "results_table", "distributions", "agreement",
         "distributions_brushed", "results_filtered", "small_screen", "heatmap", "results_documents", "search", "compare",
         "map", "map_selected", "distributions_selected", "map_documents")


def test_screenshot_tour_saves_every_view_and_timings(tmp_path):
    out = tmp_path / "shots"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    result = subprocess.run([sys.executable, "main.py", "--screenshot", str(out)], env=env,
                            capture_output=True, text=True, timeout=600,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert result.returncode == 0, result.stdout + result.stderr
    for view in VIEWS:
        png = out / f"{view}.png"
        assert png.exists() and png.stat().st_size > 10_000, view
    timings = json.loads((out / "timings.json").read_text())
    assert 0 < timings["window_shown_s"] < timings["results_shown_s"]
