"""Text map at 1,000,000 points: projection, first draw, and the longest pan or zoom stall.

A fresh process makes 1,000,000 unit vectors (384 dimensions, the built-in model's: 40 topic
directions plus noise, in float32, made in parts; encoding is left out: the map reads a scored
input's vectors from the cache), projects them (`pca_2d`, with its peak memory), draws them in the
Map tab (`MapView._mapped`: columns, colours, density, cluster names; one image of the points) and
renders the first frame, then zooms in 2x (stretched, then sharp at rest), pans a view's width in
20 steps, zooms out 2x, in 2x again and sharp again. Each step's frame is rendered offscreen and
timed in wall and CPU time of the process: the GUI thread's stall. Beyond `RENDER_IN_WORKER`
points a new image is rendered in a worker while the old one stays drawn; how long it takes to be
shown is measured apart. The machine is shared: the load average is printed with each run.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/map_scale.py [--quick]
"""

from __future__ import annotations

import os
import time

import common
from map_projection import cpu_timed, peak_of

SIZES = (1_000_000,)
QUICK_SIZES = (20_000,)
DIM = 384
STALL_TARGET_MS = 50            # no pan or zoom step longer than this
PAN_STEPS = 20
PART = 100_000                  # vectors made this many at a time (float32 throughout)


def unit_vectors(n: int, seed: int = 0):
    """`n` float32 unit vectors around 40 topic directions, and each one's topic."""
    import numpy as np

    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((40, DIM)).astype(np.float32)
    chosen = rng.integers(0, len(topics), n)
    out = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, PART):
        part = topics[chosen[start:start + PART]] + 1.5 * rng.standard_normal(
            (len(chosen[start:start + PART]), DIM), dtype=np.float32)
        out[start:start + PART] = part / np.linalg.norm(part, axis=1, keepdims=True)
    return out, chosen


def measure(n: int) -> dict:
    """One size, in this (fresh) process."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import numpy as np
    import pandas  # noqa: F401  (its first import, in the map's colour columns, is not the map's cost)
    from PySide6.QtWidgets import QApplication

    from calibsim_gui.core.analysis.clusters import Clusters
    from calibsim_gui.core.analysis.projection import TextMap, pca_2d
    from calibsim_gui.qt.session.state import AppState
    from calibsim_gui.qt.views.map.map_view import MapView

    app = QApplication.instance() or QApplication([])
    x, topics = unit_vectors(n)
    pca_2d(x[:1000])                                  # first-call costs (LAPACK, BLAS threads) apart
    projection_s, projection_peak, projection = peak_of(pca_2d, x)
    groups = topics % 12                              # twelve colour groups, as twelve clusters
    clusters = Clusters(groups, [[f"topic{g}"] for g in range(12)], np.bincount(groups, minlength=12), True)
    text_map = TextMap([""] * n, [""] * n, x, projection, sources=["corpus.txt"] * n)
    view = MapView(AppState())
    view.resize(1000, 700)
    view.show()
    app.processEvents()
    draw_s, draw_cpu_s = cpu_timed(view._mapped, (text_map, clusters))
    view.colour_combo.setCurrentText("cluster")
    first_s, first_cpu_s = cpu_timed(view.plot_widget.grab)         # the points' image rendered
    steps, ready = {}, {}

    def step(name, move) -> None:
        def act() -> None:
            move()
            view.plot_widget.grab()                   # the frame rendered
        steps[name] = cpu_timed(act)
        start = time.perf_counter()
        if view.cloud.renderer.running:               # a new image rendered in the worker: when shown
            while view.cloud.renderer.running:
                app.processEvents()
                time.sleep(0.002)
            view.plot_widget.grab()
            ready[name] = round(1000 * (time.perf_counter() - start), 1)

    step("zoom in 2x", lambda: view.view_box.scaleBy((0.5, 0.5)))           # stretched, then
    step("sharp at rest", view.cloud._sharpen)                                # rendered at rest
    width = view.view_box.viewRect().width()
    for i in range(PAN_STEPS):                        # a view's width in all: out of the rendered area
        step(f"pan {i + 1}", lambda: view.view_box.translateBy(x=0.05 * width))
    step("zoom out 2x", lambda: view.view_box.scaleBy((2, 2)))
    step("zoom in 2x again", lambda: view.view_box.scaleBy((0.5, 0.5)))
    step("sharp at rest again", view.cloud._sharpen)
    view.close()
    worst = max(steps, key=lambda name: steps[name][0])
    worst_cpu = max(steps, key=lambda name: steps[name][1])
    return {"points": n, "dimension": DIM, "projection_s": round(projection_s, 2),
            "projection_peak_rss_mb": round(projection_peak, 1),
            "draw_gui_s": round(draw_s, 3), "draw_cpu_s": round(draw_cpu_s, 3),
            "first_frame_s": round(first_s, 3), "first_frame_cpu_s": round(first_cpu_s, 3),
            "first_draw_s": round(draw_s + first_s, 3), "renders": view.cloud.renders,
            "steps_ms": {name: [round(1000 * wall, 1), round(1000 * cpu, 1)] for name, (wall, cpu) in steps.items()},
            "worker_image_ready_ms": ready, "slowest_worker_image_ms": max(ready.values(), default=0.0),
            "worst_stall_ms": round(1000 * steps[worst][0], 1), "worst_stall_step": worst,
            "worst_stall_cpu_ms": round(1000 * steps[worst_cpu][1], 1), "worst_stall_cpu_step": worst_cpu,
            "load_average_1m": round(os.getloadavg()[0], 2)}


def main() -> None:
    args = common.arguments(__doc__, quick_help=f"{QUICK_SIZES[0]:,} points only")
    if args.child:
        import json

        common.child_answer(measure(json.loads(args.child)["points"]))
        return
    runs = [common.run_child("map_scale.py", {"points": n},
                             env={"QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")})
            for n in (QUICK_SIZES if args.quick else SIZES)]
    common.print_table([{"points": r["points"], "PCA s": r["projection_s"], "PCA peak MB": r["projection_peak_rss_mb"],
                         "draw (GUI) s": r["draw_gui_s"], "first frame s": r["first_frame_s"],
                         "first draw s": r["first_draw_s"], "worst stall ms": r["worst_stall_ms"],
                         "worst step": r["worst_stall_step"], "worst CPU ms": r["worst_stall_cpu_ms"],
                         "new image shown ms": r["slowest_worker_image_ms"],
                         "load": r["load_average_1m"]} for r in runs])
    met = all(r["worst_stall_ms"] <= STALL_TARGET_MS for r in runs)
    met_cpu = all(r["worst_stall_cpu_ms"] <= STALL_TARGET_MS for r in runs)
    quick = " (quick run: a small map)" if args.quick else ""
    print(f"target: no pan or zoom step over {STALL_TARGET_MS} ms: {'met' if met else 'NOT met'} in wall time, "
          f"{'met' if met_cpu else 'NOT met'} in CPU time (load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores){quick}")
    common.save("map_scale", args, {"runs": runs, "stall_target_ms": STALL_TARGET_MS,
                                    "target_met": met, "target_met_cpu": met_cpu})


if __name__ == "__main__":
    main()
