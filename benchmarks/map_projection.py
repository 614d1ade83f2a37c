"""Text map: projection and clustering time and peak memory for 5,000 and 50,000 texts, and the
map's GUI cost at that size.

Each size runs in a fresh process on precomputed unit vectors of 384 dimensions (the built-in
model's), made of a few dozen topic directions plus noise so that they cluster a little as
sentences do; encoding is left out (the map reads a scored input's vectors from the cache).
Measured: `pca_2d` (best of 3, after a warm-up call; its peak memory from the first),
`cluster_texts` (k chosen at the elbow, named by TF-IDF words of texts made of topic words)
and `tsne_2d` (on its sample of at most 2,000 texts, the others placed), each once after a
small warm-up call (scikit-learn's imports), with its peak memory, a 200-vertex lasso (`points_in_polygon`), one point's 10 nearest texts, the
GUI-thread time to draw the points in the Map tab (`MapView._mapped`: columns and colours; beyond
5,000 points one cached image of the points over a density image), a colour change to the
clusters, and the frame time of panning the map (offscreen, each frame rendered), in wall time
and in CPU time (user + sys of this process: the machine is shared, wall time follows its load,
printed with each run).

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/map_projection.py [--quick]
"""

from __future__ import annotations

import os
import statistics
import time

import common

SIZES = (5_000, 50_000)
QUICK_SIZES = (300,)
DIM = 384
STALL_TARGET_MS = 100          # no GUI-thread step longer than this
PAN_FRAMES = 20


def vectors(n: int, seed: int = 0, *, with_topics: bool = False):
    """`n` unit vectors around 40 topic directions (and each one's topic, when asked)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((40, DIM))
    chosen = rng.integers(0, len(topics), n)
    x = topics[chosen] + 1.5 * rng.standard_normal((n, DIM))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return (x, chosen) if with_topics else x


def texts(topics, seed: int = 0) -> list[str]:
    """A text per topic number: 6 words of its topic's 8 and 2 of a shared 200."""
    import numpy as np

    rng = np.random.default_rng(seed)
    own = rng.integers(0, 8, (len(topics), 6))
    shared = rng.integers(0, 200, (len(topics), 2))
    return [" ".join([f"t{t}w{w}" for w in words] + [f"common{c}" for c in rest])
            for t, words, rest in zip(topics, own, shared)]


def peak_of(fn, *args, **kwargs) -> tuple[float, float, object]:
    """(seconds, peak memory over the start in MB, result) of one call."""
    common.reset_peak_rss()
    before = common.rss_mb()
    seconds, result = common.timed(fn, *args, **kwargs)
    return seconds, common.peak_rss_mb() - before, result


def cpu_timed(fn, *args) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    start, start_cpu = time.perf_counter(), time.process_time()
    fn(*args)
    return time.perf_counter() - start, time.process_time() - start_cpu


def measure(n: int) -> dict:
    """One size, in this (fresh) process."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import numpy as np
    from PySide6.QtWidgets import QApplication

    from calibsim_gui.core.analysis.clusters import cluster_texts
    from calibsim_gui.core.analysis.projection import TextMap, nearest, pca_2d, points_in_polygon, tsne_2d
    from calibsim_gui.qt.views.map.map_view import MapView
    from calibsim_gui.qt.session.state import AppState

    app = QApplication.instance() or QApplication([])
    x, topics = vectors(n, with_topics=True)
    words = texts(topics)
    pca_2d(vectors(100, seed=1))                      # first-call costs (LAPACK, BLAS threads) apart
    small, small_topics = vectors(100, seed=1, with_topics=True)
    cluster_texts(texts(small_topics), small)         # scikit-learn's imports apart
    tsne_2d(small)
    _, peak, projection = peak_of(pca_2d, x)
    timing = common.interleaved({"pca": lambda: pca_2d(x)}, 3)["pca"]
    coords = projection.coords
    centre, radius = coords.mean(axis=0), coords.std()
    angles = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    lasso = centre + radius * np.c_[np.cos(angles), np.sin(angles)]
    lasso_s, inside = common.timed(points_in_polygon, coords, lasso)
    cluster_s, cluster_peak, clusters = peak_of(cluster_texts, words, x)
    tsne_s, tsne_peak, _ = peak_of(tsne_2d, x)
    text_map = TextMap(words, [f"d{i}" for i in range(n)], x, projection,
                       sources=[f"file{i % 7}.txt" for i in range(n)])
    profile = common.builtin_profile()
    nearest_s, _ = common.timed(nearest, text_map, x[0], profile, k=10, exclude=0)

    view = MapView(AppState())
    view.resize(1000, 700)
    view.show()
    app.processEvents()
    draw_s, draw_cpu_s = cpu_timed(view._mapped, (text_map, clusters))
    first_frame_s, first_frame_cpu_s = cpu_timed(view.plot_widget.grab)     # the points' image rendered
    recolour_s, recolour_cpu_s = cpu_timed(view.colour_combo.setCurrentText, "cluster")
    view.plot_widget.grab()
    load_before = os.getloadavg()[0]

    def pan() -> None:
        view.view_box.translateBy(x=radius * 0.05)
        view.plot_widget.grab()                       # render the frame

    frames, cpu = zip(*(cpu_timed(pan) for _ in range(PAN_FRAMES)))
    view.close()
    return {"texts": n, "pca_s": timing["best_s"], "pca_median_s": timing["median_s"],
            "pca_peak_rss_mb": round(peak, 1),
            "explained": [round(float(v), 4) for v in projection.explained],
            "cluster_s": round(cluster_s, 3), "cluster_peak_rss_mb": round(cluster_peak, 1),
            "clusters": len(clusters.sizes), "cluster_names": clusters.names[:3],
            "tsne_s": round(tsne_s, 3), "tsne_peak_rss_mb": round(tsne_peak, 1),
            "lasso_200_vertices_s": round(lasso_s, 4), "points_in_lasso": int(inside.sum()),
            "nearest_10_s": round(nearest_s, 4), "draw_points_gui_s": round(draw_s, 4),
            "draw_points_cpu_s": round(draw_cpu_s, 4), "recolour_gui_s": round(recolour_s, 4),
            "recolour_cpu_s": round(recolour_cpu_s, 4), "first_frame_s": round(first_frame_s, 4),
            "first_frame_cpu_s": round(first_frame_cpu_s, 4),
            "pan_frame_median_ms": round(1000 * statistics.median(frames), 1),
            "pan_frame_max_ms": round(1000 * max(frames), 1),
            "pan_frame_cpu_median_ms": round(1000 * statistics.median(cpu), 1),
            "pan_frame_cpu_max_ms": round(1000 * max(cpu), 1),
            "pan_load_average_1m": round((load_before + os.getloadavg()[0]) / 2, 2)}


def main() -> None:
    args = common.arguments(__doc__, quick_help=f"{QUICK_SIZES[0]} texts only")
    if args.child:
        import json

        common.child_answer(measure(json.loads(args.child)["texts"]))
        return
    runs = [common.run_child("map_projection.py", {"texts": n},
                             env={"QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")})
            for n in (QUICK_SIZES if args.quick else SIZES)]
    common.print_table([{"texts": r["texts"], "PCA s": r["pca_s"], "PCA peak MB": r["pca_peak_rss_mb"],
                         "clusters s": r["cluster_s"], "clusters peak MB": r["cluster_peak_rss_mb"],
                         "k": r["clusters"], "t-SNE s": r["tsne_s"], "t-SNE peak MB": r["tsne_peak_rss_mb"],
                         "lasso s": r["lasso_200_vertices_s"], "10 nearest s": r["nearest_10_s"],
                         "draw (GUI) s": r["draw_points_gui_s"], "draw CPU s": r["draw_points_cpu_s"],
                         "recolour (GUI) s": r["recolour_gui_s"], "recolour CPU s": r["recolour_cpu_s"],
                         "first frame CPU s": r["first_frame_cpu_s"],
                         "pan frame median ms": r["pan_frame_median_ms"],
                         "pan frame max ms": r["pan_frame_max_ms"],
                         "pan frame CPU median ms": r["pan_frame_cpu_median_ms"],
                         "pan frame CPU max ms": r["pan_frame_cpu_max_ms"],
                         "load while panning": r["pan_load_average_1m"]} for r in runs])
    met = all(max(r["draw_points_gui_s"] * 1000, r["recolour_gui_s"] * 1000, r["first_frame_s"] * 1000,
                  r["pan_frame_max_ms"]) <= STALL_TARGET_MS for r in runs)
    met_cpu = all(max(r["draw_points_cpu_s"] * 1000, r["recolour_cpu_s"] * 1000, r["first_frame_cpu_s"] * 1000,
                      r["pan_frame_cpu_max_ms"]) <= STALL_TARGET_MS for r in runs)
    quick = " (quick run: sizes are tiny)" if args.quick else ""
    print(f"target: no GUI-thread step over {STALL_TARGET_MS} ms: {'met' if met else 'NOT met'} in wall time, "
          f"{'met' if met_cpu else 'NOT met'} in CPU time (load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores){quick}")
    common.save("map_projection", args, {"runs": runs, "dimension": DIM, "stall_target_ms": STALL_TARGET_MS,
                                         "target_met": met, "target_met_cpu": met_cpu})


if __name__ == "__main__":
    main()
