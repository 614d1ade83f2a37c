"""Every benchmark script runs in its --quick form and writes the JSON its README describes.

Timings are never asserted (benchmarks measure, tests check behaviour): only that each script
finishes, says what it measured, and saves figures with the machine they came from.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
MACHINE_KEYS = {"cpu", "cores", "torch", "torch_threads", "python", "bfloat16", "load_average_1m"}

# script -> keys its JSON must hold (besides benchmark, quick, date and machine)
SCRIPTS = {
    "calibration_throughput": {"timing", "scores_per_metric", "seconds_per_form_all_metrics", "target_met",
                               "percentiles_equal_binary_search"},
    "encode_overhead": {"timing", "texts", "target_met"},
    "notebook_vs_calibsim": {"timing", "speedup", "max_raw_score_difference", "target_met"},
    "embedding_cache": {"runs", "survives_restart", "target_met"},
    "background_build": {"timing", "memory_precomputed"},
    "document_matrix": {"per_metric", "encode_s", "matrices_total_s"},
    "throughput": {"ceiling", "cheap_wins", "auto_precision"},
    "batching": {"plans", "encode_speedup", "end_to_end", "max_cosine_difference_between_plans"},
    "precision": {"spearman_x100", "bfloat16_speedup", "auto_precision", "target_met", "int8", "graph"},
    "gui_stall": {"launch", "phases", "busy_processes", "targets_met"},
    "first_run": {"runs", "pairs", "results", "score_imports", "score_target_s", "window_target_s"},
    "ray_scaling": {"runs", "ray_speedup_2_vs_1_workers"},
    "search_scale": {"runs", "cold_s", "warm_s", "memory_budget_mb", "within_budget"},
    "engines": {"runs", "speedup_per_cpu_s_vs_torch_float32", "export_s", "quantize_s"},
    "map_projection": {"runs", "stall_target_ms", "target_met"},
    "map_scale": {"runs", "stall_target_ms", "target_met"},
    "score_phases": {"runs", "phases", "bare", "ratio"},
    "corpus_scale": {"runs", "real_vectors", "k", "targets"},
    "knn_recall": {"runs", "size", "synthetic", "rows"},
    "memory_budget": {"runs", "pairs_file_mb", "targets_met"},
    "gpu": {"device", "start", "score", "encode", "build"},
    "lock_handover": {"runs", "app_interval_ms"},
    "compare_scale": {"runs", "draw_target_ms", "step_target_ms", "target_met"},
    "window_scale": {"runs", "stall_target_ms", "p99_target_ms", "target_met"},
}
USES_REAL_MODEL = set(SCRIPTS) - {"calibration_throughput", "map_projection", "map_scale", "lock_handover",
                                  "compare_scale", "window_scale"}


def run_quick(name: str, results: Path) -> dict:
    proc = subprocess.run([sys.executable, str(BENCHMARKS / f"{name}.py"), "--quick", "--results-dir",
                           str(results)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"wrote {results / f'{name}_quick.json'}" in proc.stdout
    return json.loads((results / f"{name}_quick.json").read_text())


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in USES_REAL_MODEL else n
                                  for n in SCRIPTS])
def test_quick_run_saves_its_figures_with_the_machine(name, tmp_path):
    result = run_quick(name, tmp_path)
    assert result["benchmark"] == name and result["quick"] is True
    assert MACHINE_KEYS <= set(result["machine"])
    assert SCRIPTS[name] <= set(result)


def test_every_script_is_tested_and_described_in_the_readme():
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")} - {"common"}
    assert scripts == set(SCRIPTS)
    readme = (BENCHMARKS / "README.md").read_text()
    assert all(f"`{name}.py`" in readme for name in scripts)


def test_a_benchmark_leaves_no_temporary_folders_behind(tmp_path):
    """Each run used to leave its cache and work folders in the system's temporary folder (32 GB
    of them after a few days of test runs on the development machine, until the disk was full)."""
    system_tmp = tmp_path / "tmp"
    system_tmp.mkdir()
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "calibration_throughput.py"), "--quick",
                           "--results-dir", str(tmp_path / "results")], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "TMPDIR": str(system_tmp)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list(system_tmp.iterdir()) == []


@pytest.mark.slow
def test_corpus_scale_runs_the_neighbours_command_end_to_end_from_texts(tmp_path):
    """--from-texts runs `calibsim neighbours` as a user does (encoding, then from the cache),
    draws the app's map and checks the neighbours it wrote against exact ones."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "corpus_scale.py"), "--quick", "--from-texts",
                           "--results-dir", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "corpus_scale_1k_texts_quick.json").read_text())
    assert [run["stage"] for run in result["runs"]] == ["first run", "cached run"]
    assert all("1,000 documents, 10 nearest each by cosine (exact)" in run["printed"] for run in result["runs"])
    assert result["map_and_recall"]["neighbours_recall_at_10"] == 1.0      # exact at 1,000 texts
    assert {"map_pca_s", "map_tsne_s", "map_pca_peak_rss_mb"} <= set(result["map_and_recall"])
