"""Compare tab at 10,000 and 100,000 pairs: each step of its draw and each pan or zoom step.

A fresh process per size and drawing shows a comparison of made-up scores (two models, raw and
calibrated, uniform in 0-1; scoring is left out) in the Compare tab (`ComparisonView`), shown at
1,200 x 800: `show_comparison`, then each of its draw steps (each plot's points, the table's
columns) with the frame rendered after it, then on the raw plot: zoom in 2x, sharp at rest, a
view's width panned in 20 steps, zoom out 2x (the raw plot's frame rendered). Each is timed in wall and CPU time of the process:
the GUI thread's stall. Drawings: ``points``, every pair a separate pyqtgraph point (what Compare
drew before, and still draws up to `MANY_POINTS` pairs), and ``image``, the pairs drawn as one
image (`PointCloud`, as the Map draws a crowded map). The machine is shared: the load average is
saved with each run.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/compare_scale.py [--quick]
"""

from __future__ import annotations

import os

import common
from map_projection import cpu_timed

SIZES = (10_000, 100_000)
QUICK_SIZES = (6_000,)
DRAWINGS = ("points", "image")
DRAW_TARGET_MS = 200            # no draw step longer than this (the GUI stall target)
STEP_TARGET_MS = 50             # no pan or zoom step longer than this (the Map's target)
PAN_STEPS = 20


def measure(n: int, drawing: str) -> dict:
    """One size and drawing, in this (fresh) process."""
    import numpy as np
    import pandas as pd
    import shiboken6
    from PySide6.QtWidgets import QApplication

    from calibsim_gui.core.analysis.comparison import ModelComparison
    from calibsim_gui.qt.session.state import AppState
    from calibsim_gui.qt.views import comparison_view

    app = QApplication.instance() or QApplication([])
    if drawing == "points":
        comparison_view.MANY_POINTS = 10**12
    rng = np.random.default_rng(3)
    models = ["all-MiniLM-L6-v2@c4aa", "all-mpnet-base-v2@91ff"]
    frame = pd.DataFrame({"sentence1": [f"a {i}" for i in range(n)], "sentence2": [f"b {i}" for i in range(n)],
                          **{f"cosine_{form} [{m}]": rng.uniform(0, 1, n)
                             for form in ("raw", "calibrated") for m in models}})
    differences = {form: {"unit": "", "mean_abs_diff": 0.1, "by_pair": {}} for form in ("raw", "calibrated")}
    comparison = ModelComparison(frame, differences, "cosine", "none", models, scales={})
    view = comparison_view.ComparisonView(AppState())
    view.resize(1200, 800)
    view.show()
    for _ in range(5):
        app.processEvents()
    view.grab()
    shown_s, shown_cpu_s = cpu_timed(view.show_comparison, comparison)
    steps = {}
    while view.drawing:                               # each a turn of the event loop, then its frame
        name = f"draw {view._steps[0] or 'columns'}"
        steps[name] = cpu_timed(lambda: (view._draw_step(), view.canvas.grab()))
    view._step_timer.stop()
    plot = view.plots["raw"].vb
    area = view.canvas.mapFromScene(view.plots["raw"].sceneBoundingRect()).boundingRect()

    def step(name, move) -> None:                     # the raw plot's frame: what a pan or zoom repaints
        steps[name] = cpu_timed(lambda: (move(), view.canvas.grab(area)))

    step("zoom in 2x", lambda: plot.scaleBy((0.5, 0.5)))
    step("sharp at rest", view.clouds["raw"]._sharpen)
    width = plot.viewRect().width()
    for i in range(PAN_STEPS):
        step(f"pan {i + 1}", lambda: plot.translateBy(x=0.05 * width))
    step("zoom out 2x", lambda: plot.scaleBy((2, 2)))
    view.close()
    shiboken6.delete(view)                            # now, not as the interpreter ends (a crash)
    ms = {name: [round(1000 * wall, 1), round(1000 * cpu, 1)] for name, (wall, cpu) in steps.items()}
    draws = [name for name in ms if name.startswith("draw")]
    moves = [name for name in ms if not name.startswith("draw")]
    return {"pairs": n, "drawing": drawing, "show_comparison_ms": round(1000 * shown_s, 1),
            "show_comparison_cpu_ms": round(1000 * shown_cpu_s, 1), "steps_ms": ms,
            "worst_draw_ms": max(ms[name][0] for name in draws),
            "worst_draw_cpu_ms": max(ms[name][1] for name in draws),
            "worst_pan_zoom_ms": max(ms[name][0] for name in moves),
            "worst_pan_zoom_cpu_ms": max(ms[name][1] for name in moves),
            "load_average_1m": round(os.getloadavg()[0], 2)}


def main() -> None:
    args = common.arguments(__doc__, quick_help=f"{QUICK_SIZES[0]:,} pairs only")
    if args.child:
        import json

        case = json.loads(args.child)
        common.child_answer(measure(case["pairs"], case["drawing"]))
        return
    env = {"QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    runs = [common.run_child("compare_scale.py", {"pairs": n, "drawing": drawing}, env=env)
            for n in (QUICK_SIZES if args.quick else SIZES) for drawing in DRAWINGS]
    common.print_table([{"pairs": r["pairs"], "drawing": r["drawing"], "show ms": r["show_comparison_ms"],
                         "worst draw step ms (CPU)": f"{r['worst_draw_ms']} ({r['worst_draw_cpu_ms']})",
                         "worst pan/zoom ms (CPU)": f"{r['worst_pan_zoom_ms']} ({r['worst_pan_zoom_cpu_ms']})",
                         "load": r["load_average_1m"]} for r in runs])
    images = [r for r in runs if r["drawing"] == "image"]
    met = all(r["worst_draw_ms"] <= DRAW_TARGET_MS and r["worst_pan_zoom_ms"] <= STEP_TARGET_MS for r in images)
    print(f"targets (the image): no draw step over {DRAW_TARGET_MS} ms and no pan or zoom step over "
          f"{STEP_TARGET_MS} ms: {'met' if met else 'NOT met'} (load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores)")
    common.save("compare_scale", args, {"runs": runs, "draw_target_ms": DRAW_TARGET_MS,
                                        "step_target_ms": STEP_TARGET_MS, "target_met": met})


if __name__ == "__main__":
    main()
