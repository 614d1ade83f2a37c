"""calibsim on a CUDA GPU: its encode rate against bare ``SentenceTransformer.encode``, a profile
build's timeline, and a whole ``calibsim score`` process against ``import torch`` + CUDA start.

Four parts, each in fresh processes (issues #39 and #44):

1. **Start**: the wall time of a process that only imports torch and starts CUDA (one tensor on the
   device), and of one that only imports torch; medians of 3.
2. **Score**: whole ``calibsim score --engine torch`` processes (spawn to exit) of the STS-B test
   pairs on the device: an empty cache (which also prepares the torch engine's graph, #44), a warm
   one (the prepared graph: no sentence-transformers) and ``--no-cache``; one more warm run under
   ``-X importtime`` (its table in ``--logs-dir``), and a warm run through sentence-transformers
   (``CALIBSIM_TORCH_GRAPH=0``) to compare. Target (#44): the warm run <= the torch + CUDA start
   above + 2 s.
3. **Encode rate** (one process): the built-in model as calibsim loads it, on the same distinct
   texts (all distinct AG News titles and descriptions, STS-B and SICK test sentences, ~43 k):
   bare ``SentenceTransformer.encode`` (batch sizes 32, its default, and 256) against calibsim's
   ``encode_texts`` on the torch engine's prepared graph (its default for the device, 64 and 1024;
   the default with an empty embedding cache storing every vector; the default through
   sentence-transformers, ``CALIBSIM_TORCH_GRAPH=0``'s engine) in float32, and the defaults in bfloat16. The rate ratio is
   calibsim's over the best bare rate of the same precision (target >= 0.5, #39).
4. **Profile build**: ``calibsim profile build`` of those texts with ``--pairs`` random pairs
   (default 200,000) on the device, with an empty embedding cache and the torch graph prepared
   by part 2: its progress lines with their times and the GPU's utilisation sampled every 200 ms
   (``nvidia-smi``), so idle pauses show (the timeline goes to ``--logs-dir``).

``--quick`` proves the script works on any machine (the CPU where there is no GPU): 100 texts,
500 pairs, one start of each kind, two score runs of 20 pairs, float32 only. A part that fails is recorded
with its error and the script exits 1 after the others ran.

    python benchmarks/gpu.py [--quick] [--device auto] [--pairs N] [--logs-dir DIR] [--skip PARTS]
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import common

MAIN = str(common.REPO / "main.py")
BARE_BATCHES = {"float32": (32, 256), "bfloat16": (256,)}
CALIBSIM_BATCHES = {"float32": (None, 64, 1024), "bfloat16": (None,)}
"""None: calibsim's default for the device (`encoding.default_batch_size`)."""


def extend(parser) -> None:
    parser.add_argument("--device", default="auto", help="torch device (default auto: cuda where there is one)")
    parser.add_argument("--pairs", type=int, default=200_000, help="background pairs of the build")
    parser.add_argument("--logs-dir", type=Path, default=None,
                        help="where the timelines, import times and profiles go (default: --results-dir)")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: start,encode,build,score")


def corpus(quick: bool) -> list[str]:
    """Distinct real sentences: AG News titles and descriptions, STS-B and SICK test sentences."""
    import pandas as pd

    texts = common.agnews_texts()
    for path in (common.stsb_path("test"), common.DATA / "sick" / "test.csv"):
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        texts += frame["sentence1"].tolist() + frame["sentence2"].tolist()
    texts = list(dict.fromkeys(t for t in texts if t.strip()))
    return texts[:100] if quick else texts


def wall(cmd: list[str], env: dict | None = None) -> float:
    """Seconds from spawn to exit of `cmd` (which must succeed)."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, env={**os.environ, **(env or {})}, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return seconds


# --------------------------------------------------------------------------- 1. start


def start_costs(device: str, repeats: int) -> dict:
    init = f"import torch; torch.zeros(1, device={device!r})"
    init += "; torch.cuda.synchronize()" if device.startswith("cuda") else ""
    runs = {"import torch": [wall([sys.executable, "-c", "import torch"]) for _ in range(repeats)],
            "import torch + CUDA start": [wall([sys.executable, "-c", init]) for _ in range(repeats)]}
    return {name: {"median_s": statistics.median(v), "runs_s": v} for name, v in runs.items()}


# --------------------------------------------------------------------------- 2. encode rate


def encode_child(case: dict) -> None:
    """In a fresh process: bare and calibsim encode rates on `case`'s texts (see the module)."""
    import numpy as np
    import torch

    from calibsim_gui.core.embedding.cache import EmbeddingCache
    from calibsim_gui.core.embedding.encoding import (
        default_batch_size,
        encode_texts,
        seen_parts,
    )
    from calibsim_gui.core.embedding.models import load_model
    from calibsim_gui.core.embedding.torch_engine import load_torch_model

    texts = json.loads(Path(case["texts"]).read_text())
    rows = []

    sync = torch.cuda.synchronize if case["device"].startswith("cuda") else (lambda: None)

    def timed(fn, *args, **kwargs):
        sync()
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        sync()
        return time.perf_counter() - start, out

    for precision in ("float32",) if case["quick"] else ("float32", "bfloat16"):
        embedder = load_model(None, device=case["device"], precision=precision, engine="torch")
        full = load_torch_model(embedder.info, device=case["device"], precision=precision)
        bare = full._model
        bare.encode(texts[:500], batch_size=64, show_progress_bar=False)        # warm-up
        reference = None
        for batch in BARE_BATCHES[precision][:1 if case["quick"] else None]:
            seconds, vectors = timed(bare.encode, texts, batch_size=batch, convert_to_numpy=True,
                                     show_progress_bar=False, prompt="")
            reference = vectors if reference is None else reference
            rows.append({"precision": precision, "who": "bare", "batch": batch, "seconds": seconds,
                         "texts_per_s": len(texts) / seconds})
        best_bare = max(r["texts_per_s"] for r in rows if r["precision"] == precision and r["who"] == "bare")
        seconds, _ = timed(seen_parts, embedder, texts)
        rows.append({"precision": precision, "who": "calibsim token counts alone", "batch": "",
                     "seconds": seconds, "texts_per_s": len(texts) / seconds})
        runs = [(b, False, embedder) for b in CALIBSIM_BATCHES[precision][:1 if case["quick"] else None]]
        runs += [(None, True, embedder), (None, False, full)] * (precision == "float32")
        for batch, cached, model in runs:
            cache = EmbeddingCache(Path(tempfile.mkdtemp()) / "cache.sqlite") if cached else None
            seconds, result = timed(encode_texts, model, texts, batch_size=batch, cache=cache)
            if cache is not None:
                cache.close()
            change = float(np.abs(result.embeddings - reference).max())
            who = "calibsim" + (" + cache" if cached else "") + (" sentence-transformers" if model is full else "")
            rows.append({"precision": precision, "who": who,
                         "batch": batch or f"default {default_batch_size(embedder)}", "seconds": seconds,
                         "texts_per_s": len(texts) / seconds, "of_best_bare": len(texts) / seconds / best_bare, "max_abs_vs_bare": change})
        embedder = full = bare = None
        torch.cuda.empty_cache()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    common.child_answer({"rows": rows, "gpu": gpu, "torch": torch.__version__})


# --------------------------------------------------------------------------- 3. build timeline


class Sampler(threading.Thread):
    """GPU utilisation (%) and memory (MiB) every 200 ms, with times from `t0`."""

    def __init__(self, t0: float):
        super().__init__(daemon=True)
        self.t0, self.samples = t0, []
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used",
                                          "--format=csv,noheader,nounits", "-lms", "200"],
                                         stdout=subprocess.PIPE, text=True)
        except FileNotFoundError:       # no NVIDIA GPU: the timeline has progress lines only
            self.proc = None

    def run(self) -> None:
        for line in self.proc.stdout if self.proc else ():
            try:
                util, memory = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.samples.append((round(time.perf_counter() - self.t0, 2), util, memory))

    def stop(self) -> list:
        if self.proc:
            self.proc.terminate()
        self.join(timeout=5)
        return self.samples


def timeline(cmd: list[str], env: dict) -> dict:
    """Run `cmd`, timing each progress line it writes to stderr (split at CR and LF) and sampling
    the GPU; idle pauses are runs of 0 % utilisation of 1 s or more."""
    t0 = time.perf_counter()
    sampler = Sampler(t0)
    sampler.start()
    proc = subprocess.Popen(cmd, env={**os.environ, **env}, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    lines, buffer = [], b""
    while chunk := proc.stderr.read1(65536):
        parts = re.split(rb"[\r\n]", buffer + chunk)
        buffer = parts.pop()
        now = round(time.perf_counter() - t0, 2)
        lines += [(now, p.decode(errors="replace").strip()) for p in parts if p.strip()]
    proc.wait()
    seconds = time.perf_counter() - t0
    samples = sampler.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {lines[-5:]}")
    busy = [t for t, util, _ in samples if util > 0]
    pauses, start = [], None
    for t, util, _ in samples:
        if busy and busy[0] <= t <= busy[-1] and util == 0:
            start = t if start is None else start
        elif start is not None:
            if t - start >= 1.0:
                pauses.append((start, t))
            start = None
    return {"seconds": seconds, "first_busy_s": busy[0] if busy else None, "last_busy_s": busy[-1] if busy else None,
            "idle_pauses_s": pauses, "lines": thin(lines), "gpu_samples": samples}


def thin(lines: list) -> list:
    """Every line whose message changed beyond its numbers, and every 20th of the rest."""
    kept, last = [], None
    for i, (t, text) in enumerate(lines):
        shape = re.sub(r"[\d,.]+", "#", text)[:60]
        if shape != last or i % 20 == 0 or i == len(lines) - 1:
            kept.append((t, text[:160]))
        last = shape
    return kept


def build_runs(args, texts: list[str], logs: Path) -> dict:
    background = Path(tempfile.mkdtemp()) / "background.txt"
    background.write_text("\n".join(texts) + "\n")
    cmd = [sys.executable, MAIN, "profile", "build", "--background", str(background), "--pairs", str(args.pairs),
           "--device", args.device, "--out", str(Path(tempfile.mkdtemp()) / "p.calibsim-profile")]
    run = timeline(cmd, {"CALIBSIM_CACHE_DIR": tempfile.mkdtemp()})
    (logs / "gpu_build_timeline.json").write_text(json.dumps(run, indent=0))
    return {"texts": len(texts), "pairs": args.pairs, **{k: v for k, v in run.items() if k not in ("lines", "gpu_samples")}}


# --------------------------------------------------------------------------- 4. score


def score_runs(args, logs: Path) -> dict:
    pairs = common.stsb_path("test")
    if args.quick:          # 20 pairs: the run, not the figure, is what --quick checks
        lines = pairs.read_text().splitlines(keepends=True)[:21]
        pairs = Path(tempfile.mkdtemp()) / "pairs.csv"
        pairs.write_text("".join(lines))
    pairs = str(pairs)
    env = {"CALIBSIM_CACHE_DIR": tempfile.mkdtemp()}

    def score(*extra, prefix=(), stderr=None, full=False):
        out = Path(tempfile.mkdtemp()) / "scores.csv"
        cmd = [sys.executable, *prefix, MAIN, "score", pairs, "--device", args.device, "--engine", "torch",
               "--out", str(out), *extra]
        if stderr is None:
            return wall(cmd, {**env, "CALIBSIM_TORCH_GRAPH": "0"} if full else env)
        start = time.perf_counter()
        with open(stderr, "w") as sink:
            subprocess.run(cmd, env={**os.environ, **env}, stderr=sink, stdout=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start

    runs = {"empty cache": score(), "warm": score()}
    if not args.quick:
        runs["--no-cache"] = score("--no-cache")
        runs["warm, -X importtime"] = score(prefix=("-X", "importtime"), stderr=logs / "gpu_score_importtime.txt")
        runs["warm, sentence-transformers (CALIBSIM_TORCH_GRAPH=0)"] = score(full=True)
    return runs


def main() -> None:
    args = common.arguments(__doc__, quick_help="100 texts, 500 pairs, float32 only", extend=extend)
    if args.child:
        encode_child(json.loads(args.child))
        return
    from calibsim_gui.core.embedding.devices import resolve_device

    args.device = resolve_device(args.device)
    # one folder of prepared torch graphs for every part: the first score run prepares the graph,
    # the later runs, the encode rates and the build run it (each still with an empty embedding cache)
    os.environ.setdefault("CALIBSIM_TORCH_GRAPH_DIR", tempfile.mkdtemp())
    logs = args.logs_dir or args.results_dir
    logs.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    if args.quick:
        args.pairs = min(args.pairs, 500)
    texts = corpus(args.quick)
    payload = {"device": args.device}
    listed = Path(tempfile.mkdtemp()) / "texts.json"
    listed.write_text(json.dumps(texts))
    parts = {"start": lambda: start_costs(args.device, 1 if args.quick else 3),
             "score": lambda: score_runs(args, logs),
             "encode": lambda: common.run_child("gpu.py", {"texts": str(listed), "device": args.device,
                                                           "quick": args.quick}),
             "build": lambda: build_runs(args, texts, logs)}
    for name, part in parts.items():
        if name in skip:
            continue
        try:
            payload[name] = part()
        except Exception as exc:        # one part failing leaves the others to measure
            payload[name] = {"error": f"{type(exc).__name__}: {exc}"[-2000:]}
            print(name, payload[name]["error"], flush=True)
            continue
        if name == "encode":
            common.print_table(payload[name]["rows"])
        else:
            print(name, json.dumps(payload[name]), flush=True)
        common.save("gpu", args, payload)       # after each part: a run cut short keeps what it measured
    if any("error" in payload[name] for name in parts if name in payload):
        sys.exit(1)


if __name__ == "__main__":
    main()
