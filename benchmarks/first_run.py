"""Fixed cost of a run: a 10-pair ``calibsim score`` and the desktop window, whole process.

Each measurement spawns a fresh ``python main.py`` process, as a user's command does:
- score: ``calibsim score`` of the first 10 STS-B test pairs to a CSV (built-in model and profile,
  default engine), timed from spawn to exit, with the CPU time (user + sys) the process used;
- window: the app (``run_app``, offscreen unless QT_QPA_PLATFORM says otherwise), timed from
  spawn to the first event-loop turn after the main window is shown.
Fresh cache: for every run a new cache folder as an install leaves it: ``calibsim models
--prepare`` (what ``make install`` runs; untimed) checked the graph and the model folder and wrote
the built-in reference's checked copy and the language detector's copy there; no embedding is
cached, so the run's texts are all new. The ONNX graph is the one prepared at install, prepared
here once if the machine has none. Warm cache: one cache folder, filled by an untimed run of the
same command first (its texts are cached). The machine may be shared: medians of the
runs are reported with the load average around them. Targets: score <= 1.0 s, window < 1.0 s.
calibsim's own modules are compiled to bytecode first, as an install does (``pip`` compiles
them; a shell with PYTHONDONTWRITEBYTECODE=1 otherwise compiles ~80 modules in every process).
One more warm score run under ``python -X importtime`` gives the table of its 20 slowest
top-level imports (``score_imports``; issue 44).

Score, warm (issue 29): weight digests come from the cache by stat data
(``core/embedding/file_digests.py``), a graph checked before opens its ONNX Runtime session only
when a text is encoded (``passed_checks.py``; none when all are cached), the model folder's
tokenizer is checked once per content, the calibrated scale's
interval maps all resampled lines at once, a profile from its checked cache entry skips the
sketch checks it passed, physical memory is read without psutil and the PDF module escapes
without ``xml.sax`` (which loaded urllib, http and ssl). A warm run loads neither onnxruntime,
psutil nor ssl; pandas (~0.4 s of CPU) and numpy are most of what is left.

Whole run (issue 29's acceptance, ``--only full``): the 1,379 STS-B test pairs, each case a fresh
process timed from spawn to exit, side by side with the notebook way:
- notebook way: ``python -c`` that imports sentence_transformers, loads the built-in model folder
  (``builtin_model_path()``, the folder ``resolve_model(None)`` gives; offline) and runs
  ``notebook_vs_calibsim.notebook_way`` (each sentence encoded separately, scipy's metrics per pair,
  the five metrics calibrated with the built-in profile), writing its table to a CSV;
- first run: ``calibsim score <pairs> --out ... --force --quiet`` with the cache as installed and
  the graph prepared at install (as above);
- later run float32: the same with ``--no-cache``, the cache folder filled by an untimed run first
  (the checked graph, profile and digests a user's later runs find there);
- later run int8: ``--precision int8 --no-cache``, the int8 graph quantised once by the untimed run,
  in a copy of the prepared graph's folder (the user's is never written).
Targets: first run >= 8x, later float32 >= 10x, later int8 >= 15x the notebook way. Speedups are
given in wall time and in CPU time (user + sys of the process and its children): the machine is
shared, and the CPU ratio is the robust one under load (wall time follows the other jobs).
``--only`` writes ``first_run_<case>.json``, so a partial run keeps the full run's figures.
Measured 2026-11-26 14:04-14:17 UTC, ``--only full --runs 1``, load 5.0-5.9 on the 2 cores: notebook
way 571.5 s wall / 433.7 s CPU; first run 35.6 / 27.6 s (16.0x wall, 15.7x CPU); later float32
45.4 / 25.0 s (12.6x, 17.4x); later int8 28.4 / 18.5 s (20.2x, 23.4x). All targets met at that load,
but the notebook way's one-sentence torch calls suffer far more from load than calibsim's batches
(the issue's quiet run: 83.5 s wall), so these ratios overstate a quiet machine's: rerun it quiet.

    .venv/bin/python benchmarks/first_run.py [--quick] [--runs N] [--only score|window|full]
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import common

SCORE_TARGET_S = 1.0
WINDOW_TARGET_S = 1.0
FULL_TARGETS = {"first run": 8.0, "later run float32": 10.0, "later run int8": 15.0}
NOTEBOOK = r"""
import sys
from sentence_transformers import SentenceTransformer
sys.path.insert(0, sys.argv[3])
import common
from notebook_vs_calibsim import NOTEBOOK_METRICS, notebook_way
from calibsim_gui.core.embedding.model_folders import builtin_model_path
model = SentenceTransformer(str(builtin_model_path()), device="cpu")
notebook_way(model, common.builtin_profile(), sys.argv[1], NOTEBOOK_METRICS).to_csv(sys.argv[2], index=False)
"""
WINDOW = r"""
import os, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
app = QApplication(sys.argv[:1])
def shown():
    print("shown", flush=True)
    os._exit(0)
QTimer.singleShot(0, shown)      # the first event-loop turn: after run_app shows the window
from calibsim_gui.qt.shell.app import run_app
run_app()
"""


def int8_graphs(graphs: str) -> str:
    """A temporary folder holding a copy of the built-in model's prepared float32 graph from
    `graphs`, for the int8 case to quantise into."""
    from calibsim_gui.core.embedding.model_folders import fingerprint_folder, resolve_model
    from calibsim_gui.core.embedding.onnx_engine import cached_graph

    info = resolve_model(None)
    name = cached_graph(fingerprint_folder(info.path, info.name)).parent.name
    folder = tempfile.mkdtemp(prefix="calibsim-bench-onnx-int8-")
    shutil.copytree(common.Path(graphs) / name, common.Path(folder) / name)
    return folder


def spawn(command: list[str], env: dict, *, until_line: bool = False) -> dict:
    """Wall seconds from spawn to exit (or to its first line of output), CPU seconds, load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=common.REPO)
    if until_line:
        line = proc.stdout.readline()
        wall = time.perf_counter() - started
        proc.wait()
        if line.strip() != "shown":
            raise RuntimeError(f"the app did not show its window: {proc.stderr.read()[-2000:]}")
    else:
        _, err = proc.communicate()
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}):\n{err[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "load_1m": (load + os.getloadavg()[0]) / 2}


def environment(cache: str, graphs: str) -> dict:
    return {**os.environ, "CALIBSIM_CACHE_DIR": cache, "CALIBSIM_ONNX_DIR": graphs,
            "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
            "XDG_CONFIG_HOME": tempfile.mkdtemp(prefix="calibsim-bench-config-"),
            "CALIBSIM_STATE_DIR": tempfile.mkdtemp(prefix="calibsim-bench-state-"),
            "CALIBSIM_DATA_DIR": tempfile.mkdtemp(prefix="calibsim-bench-data-")}


def installed_cache(graphs: str) -> str:
    """A new cache folder as an install leaves it: filled by ``calibsim models --prepare``."""
    cache = tempfile.mkdtemp(prefix="calibsim-bench-cache-")
    subprocess.run([sys.executable, str(common.REPO / "main.py"), "models", "--prepare"], check=True,
                   env=environment(cache, graphs), capture_output=True)
    return cache


def measure(command: list[str], graphs: str, runs: int, *, warm: bool, until_line: bool = False) -> dict:
    """Medians of `runs` spawns of `command`, each with a cache as installed or all with one warm cache."""
    warm_cache = installed_cache(graphs)
    if warm:
        spawn(command, environment(warm_cache, graphs), until_line=until_line)      # fills the cache
    results = [spawn(command, environment(warm_cache if warm else installed_cache(graphs), graphs),
                     until_line=until_line) for _ in range(runs)]
    return {key: round(statistics.median(r[key] for r in results), 3) for key in results[0]} | {
        "runs_wall_s": [round(r["wall_s"], 3) for r in results]}


def import_table(command: list[str], graphs: str, top: int = 20) -> list[dict]:
    """The `top` imports of a warm run of `command` (``python -X importtime``), the slowest first:
    module and cumulative milliseconds of the imports made at top level (not inside another)."""
    cache = installed_cache(graphs)
    spawn(command, environment(cache, graphs))                                # fills the cache
    done = subprocess.run([command[0], "-X", "importtime", *command[1:]], capture_output=True, text=True,
                          env=environment(cache, graphs), cwd=common.REPO, check=True)
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit() and not name.startswith("  "):     # top level
                rows.append({"module": name.strip(), "cumulative_ms": round(int(cumulative) / 1000, 1)})
    return sorted(rows, key=lambda r: -r["cumulative_ms"])[:top]


def whole_runs(work: common.Path, graphs: str, runs: int, quick: bool) -> list[dict]:
    """The 1,379-pair cases (the first 100 with `quick`, which checks the cases run, not the
    targets), each against the notebook way: wall and CPU speedups, targets, and the largest
    difference of its raw cosines from the notebook's."""
    import pandas as pd

    pairs = work / "pairs_full.csv"
    pd.read_csv(common.stsb_path("test"))[["sentence1", "sentence2"]].head(100 if quick else None).to_csv(
        pairs, index=False)
    out = {name: work / f"{name.replace(' ', '_')}.csv" for name in ("notebook way", *FULL_TARGETS)}
    score = [sys.executable, str(common.REPO / "main.py"), "score", str(pairs), "--force", "--quiet", "--out"]
    cases = (("notebook way", [sys.executable, "-c", NOTEBOOK, str(pairs), str(out["notebook way"]),
                               str(common.HERE)], graphs, False),
             ("first run", score + [str(out["first run"])], graphs, False),
             ("later run float32", score + [str(out["later run float32"]), "--no-cache"], graphs, True),
             ("later run int8", score + [str(out["later run int8"]), "--precision", "int8", "--no-cache"],
              int8_graphs(graphs), True))
    rows = [{"case": name, **measure(command, folder, runs, warm=warm)} for name, command, folder, warm in cases]
    shutil.rmtree(cases[-1][2])          # the int8 case's copy of the graph (~110 MB)
    notebook, base = pd.read_csv(out["notebook way"])["cosine"], rows[0]
    base["pairs"] = len(notebook)
    for row in rows[1:]:
        cosines = pd.read_csv(out[row["case"]])["cosine_raw"]
        row.update({"pairs": len(cosines), "max_cosine_diff": float((cosines - notebook).abs().max())})
        target = FULL_TARGETS[row["case"]]
        row.update({f"speedup_{kind}": round(base[f"{kind}_s"] / row[f"{kind}_s"], 2) for kind in ("wall", "cpu")})
        row.update({"target_x": target, "met_wall": row["speedup_wall"] >= target,
                    "met_cpu": row["speedup_cpu"] >= target})
    return rows


def main() -> None:
    import argparse

    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--runs", type=int, help="runs of each case (default 5, 1 with --quick)")
    extra.add_argument("--only", choices=("score", "window", "full"),
                       help="measure one case only (default all: score, window and the full 1,379 pairs)")
    options, sys.argv[1:] = extra.parse_known_args()
    args = common.arguments(__doc__, quick_help="one run of each; the whole run on 100 pairs")
    runs = options.runs or (1 if args.quick else 5)
    import pandas as pd

    work = common.Path(tempfile.mkdtemp(prefix="calibsim-bench-"))
    pairs = work / "pairs10.csv"
    pd.read_csv(common.stsb_path("test"))[["sentence1", "sentence2"]].head(10).to_csv(pairs, index=False)
    graphs = common.prepared_graphs()
    common.compile_calibsim()
    score = [sys.executable, str(common.REPO / "main.py"), "score", str(pairs), "--out", str(work / "out.csv"),
             "--force", "--quiet"]
    window = [sys.executable, "-c", WINDOW]
    rows = []
    cases = (("score 10 pairs", score, SCORE_TARGET_S, False), ("window shown", window, WINDOW_TARGET_S, True))
    for name, command, target, until_line in (c for c in cases if options.only in (None, c[0].split()[0])):
        for cache in ("fresh", "warm"):
            result = measure(command, graphs, runs, warm=cache == "warm", until_line=until_line)
            rows.append({"case": name, "cache": cache, **result, "target_s": target,
                         "met": result["wall_s"] <= target})
    imports = import_table(score, graphs) if options.only in (None, "score") else []
    full = whole_runs(work, graphs, runs, args.quick) if options.only in (None, "full") else []
    if rows:
        common.print_table(rows, ["case", "cache", "wall_s", "cpu_s", "load_1m", "target_s", "met", "runs_wall_s"])
    if imports:
        print("warm 10-pair score, top-level imports (python -X importtime):")
        common.print_table(imports)
    if full:
        common.print_table(full, ["case", "pairs", "wall_s", "cpu_s", "load_1m", "speedup_wall", "speedup_cpu",
                                  "target_x", "met_wall", "met_cpu", "max_cosine_diff"])
    loads = [r["load_1m"] for r in rows + full]
    print(f"medians of {runs} runs; load average (1 min) during them "
          f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")
    common.save("first_run" + (f"_{options.only}" if options.only else ""), args, {
        "runs": runs, "pairs": 10, "onnx_graphs": graphs, "results": rows, "score_imports": imports,
        "full_run": full,
        "full_targets_x": FULL_TARGETS, "score_target_s": SCORE_TARGET_S, "window_target_s": WINDOW_TARGET_S})


if __name__ == "__main__":
    main()
