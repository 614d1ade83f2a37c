"""What every benchmark script shares: arguments, machine facts, real texts, timing, results.

Each script runs as ``.venv/bin/python benchmarks/<name>.py [--quick] [--results-dir DIR]``,
prints a table and writes ``<results-dir>/<name>.json`` (``<name>_quick.json`` with --quick).
The embedding cache and Qt settings go to temporary folders, never the user's, and every temporary
folder is removed when the script ends.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = Path(os.environ.get("CALIBSIM_BENCH_DATA") or REPO.parent / "shared" / "data")
"""The shared data (README "Data"); ``CALIBSIM_BENCH_DATA`` names it on a machine that has it elsewhere."""
RESULTS = HERE / "results"

USER_CACHE_ENV = {name: os.environ.get(name) for name in ("CALIBSIM_CACHE_DIR", "CALIBSIM_ONNX_DIR")}
"""The user's cache settings, before the benchmarks' own empty cache replaces them."""
WORK = tempfile.mkdtemp(prefix="calibsim-bench-")
"""This process's temporary folder, removed at exit: every temporary file or folder the script makes
(tempfile's default folder) goes inside it, so runs never pile up in the system's."""
tempfile.tempdir = WORK
atexit.register(shutil.rmtree, WORK, ignore_errors=True)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["CALIBSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="calibsim-bench-cache-")
if str(REPO) not in sys.path:      # run from anywhere, without installing calibsim
    sys.path.insert(0, str(REPO))


LOAD_AT_START = os.getloadavg()[0]       # the machine is shared: say how busy it was


def arguments(doc: str, *, quick_help: str, extend=None) -> argparse.Namespace:
    """``--quick`` (tiny sizes: proves the script works), ``--results-dir`` and what
    ``extend(parser)`` adds."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    if extend is not None:
        extend(parser)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--results-dir", type=Path, default=RESULTS,
                        help=f"where the JSON goes (default {RESULTS.relative_to(REPO)})")
    parser.add_argument("--child", help=argparse.SUPPRESS)   # a measurement run in a fresh process
    return parser.parse_args()


# --------------------------------------------------------------------------- machine


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict:
    """CPU, cores, load, library versions and torch's threads (imports torch)."""
    from importlib.metadata import version

    import torch

    from calibsim_gui.core.embedding.devices import bfloat16_support

    return {
        "cpu": cpu_model(), "machine": platform.machine(), "cores": os.cpu_count(),
        "load_average_1m": round(LOAD_AT_START, 2),
        "bfloat16": bfloat16_support("cpu") or "native",
        "python": platform.python_version(), "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(), "torch_interop_threads": torch.get_num_interop_threads(),
        "sentence_transformers": version("sentence-transformers"), "numpy": version("numpy"),
        "onnxruntime": version("onnxruntime"),
    }


# --------------------------------------------------------------------------- data


def agnews_texts(n: int | None = None, *, offset: int = 0) -> list[str]:
    """Distinct AG News titles and descriptions (backslash line breaks made spaces), in file order."""
    import pandas as pd

    frame = pd.concat([pd.read_csv(DATA / "agnews" / name, dtype=str, keep_default_na=False)
                       for name in ("test.csv", "train.csv")])
    texts = [" ".join(t.replace("\\", " ").split())
             for t in frame["title"].tolist() + frame["description"].tolist()]
    texts = list(dict.fromkeys(t for t in texts if t))
    return texts[offset:None if n is None else offset + n]


def agnews_articles(n: int) -> list[tuple[str, str]]:
    """(title, description) of the first `n` AG News articles: natural pairs of related texts."""
    import pandas as pd

    frame = pd.concat([pd.read_csv(DATA / "agnews" / name, dtype=str, keep_default_na=False)
                       for name in ("test.csv", "train.csv")])
    clean = [[" ".join(t.replace("\\", " ").split()) for t in frame[c]] for c in ("title", "description")]
    return list(zip(*clean))[:n]


def stsb_path(split: str = "test") -> Path:
    return DATA / "stsb" / f"{split}.csv"


def write_pairs_csv(pairs, path: Path) -> Path:
    import pandas as pd

    pd.DataFrame(list(pairs), columns=["sentence1", "sentence2"]).to_csv(path, index=False)
    return path


# --------------------------------------------------------------------------- models


def builtin_embedder(precision: str = "float32", engine: str = "torch"):
    """The built-in model on the CPU (torch float32 unless asked), as calibsim loads it."""
    from calibsim_gui.core.embedding.models import load_model

    return load_model(None, device="cpu", precision=precision, engine=engine)


def bare_model(embedder):
    """The plain ``SentenceTransformer`` of `embedder`'s model (what a notebook would load): the
    one inside a sentence-transformers embedder, else (the torch engine's prepared graph) loaded
    as the torch engine loads it, on the same device in the same precision, so only what calibsim
    adds around it differs."""
    if hasattr(embedder, "_model"):
        return embedder._model
    from calibsim_gui.core.embedding.torch_engine import load_torch_model

    return load_torch_model(embedder.info, device=embedder.device, precision=embedder.precision)._model


def builtin_profile():
    from calibsim_gui.core.calibration.profile import ReferenceProfile
    from calibsim_gui.core.calibration.profile_builder import builtin_profile_path

    return ReferenceProfile.load(builtin_profile_path("all-MiniLM-L6-v2"))


# --------------------------------------------------------------------------- timing & memory


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    """(seconds, result) of one call, after a garbage collection."""
    gc.collect()
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def interleaved(variants: dict, repeats: int) -> dict[str, dict]:
    """Time each variant `repeats` times in turn (A B C, C B A, A B C ...), so that changes in
    load, and going first or last, hit all alike.

    `variants` maps a name to a no-argument callable. Returns per name the best and median
    seconds and the last result.
    """
    times: dict[str, list[float]] = {name: [] for name in variants}
    results = {}
    for round_ in range(repeats):
        order = list(variants.items())
        for name, fn in order if round_ % 2 == 0 else order[::-1]:
            seconds, results[name] = timed(fn)
            times[name].append(seconds)
    return {name: {"best_s": round(min(t), 4), "median_s": round(statistics.median(t), 4),
                   "runs_s": [round(x, 4) for x in t], "result": results[name]}
            for name, t in times.items()}


def rss_mb() -> float:
    """Resident memory of this process now, in MB (Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_rss_mb() -> float:
    """Largest resident memory this process has had, in MB.

    Linux: VmHWM. (ru_maxrss would not do in a child process: Linux carries over the peak of
    the parent's forked copy across exec.)
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024          # ru_maxrss: bytes on macOS, KB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1e6


def reset_peak_rss() -> None:
    """Start `peak_rss_mb` afresh from the current memory (Linux: /proc/self/clear_refs)."""
    Path("/proc/self/clear_refs").write_text("5")


def prepared_graphs() -> str:
    """The folder holding the built-in model's ONNX graph as prepared at install (the user's
    ``onnx_cache_dir``); prepared into a temporary folder first when the machine has none."""
    from calibsim_gui.core.embedding.model_folders import fingerprint_folder, resolve_model
    from calibsim_gui.core.embedding.onnx_engine import cached_graph, onnx_cache_dir

    saved = {name: os.environ.get(name) for name in USER_CACHE_ENV}
    os.environ.update({k: v for k, v in USER_CACHE_ENV.items() if v is not None})
    for name in (k for k, v in USER_CACHE_ENV.items() if v is None):
        os.environ.pop(name, None)
    try:
        folder = str(onnx_cache_dir())
        info = resolve_model(None)
        ready = cached_graph(fingerprint_folder(info.path, info.name)).is_file()
    finally:
        os.environ.update({k: v for k, v in saved.items() if v is not None})
    if not ready:
        folder = tempfile.mkdtemp(prefix="calibsim-bench-onnx-")
        subprocess.run([sys.executable, str(REPO / "main.py"), "models", "--prepare"], check=True,
                       env={**os.environ, "CALIBSIM_ONNX_DIR": folder}, capture_output=True)
    return folder


def compile_calibsim() -> None:
    """Compile calibsim's modules to bytecode, as an install does (``pip`` compiles them; in a shell
    with PYTHONDONTWRITEBYTECODE=1 every process would otherwise compile ~80 modules again)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "calibsim_gui")], check=True)


def run_child(script: str, case: dict, *, env: dict | None = None) -> dict:
    """Run one measurement (``--child JSON``) of `script` in a fresh process; its JSON answer."""
    proc = subprocess.run([sys.executable, str(HERE / script), "--child", json.dumps(case)],
                          capture_output=True, text=True, env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise RuntimeError(f"{script} --child {case} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child_answer(result: dict) -> None:
    """Send a child's result back to `run_child` (last line of stdout)."""
    print(json.dumps(result), flush=True)


# --------------------------------------------------------------------------- output


def print_table(rows: list[dict], columns: list[str] | None = None) -> None:
    columns = columns or list(rows[0])
    cells = [[_cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return str(value)


def save(name: str, args, payload: dict) -> Path:
    """Write ``{benchmark, quick, machine, ...payload}`` as JSON and say where."""
    out = args.results_dir / (f"{name}_quick.json" if args.quick else f"{name}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    data = {"benchmark": name, "quick": args.quick,
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "machine": machine_info(), **payload}
    data["machine"]["load_average_1m_at_end"] = round(os.getloadavg()[0], 2)
    out.write_text(json.dumps(data, indent=1, default=_jsonable) + "\n")
    print(f"wrote {out}")
    return out


def _jsonable(value):
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON-able")
