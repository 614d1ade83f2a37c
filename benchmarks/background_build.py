"""Background build: a reference profile from 20,000 sentences, with and without encoding, and its memory.

Time: ``build_profile`` on 20,000 distinct AG News sentences (20,000 random pairs, the built-in
anchors, the app's defaults) with the real model and no cache (encoding included), then again on the same
sentences with their embeddings precomputed (encoding excluded). Memory: peak resident memory
of a fresh process that builds a profile from 20,000 and from 100,000 precomputed synthetic
unit vectors (dim 384), next to its memory just before the build.

    .venv/bin/python benchmarks/background_build.py [--quick]
"""

from __future__ import annotations

import hashlib
import json

import common

DIMENSION = 384


class PrecomputedEmbedder:
    """Hands out precomputed vectors instead of running a model (isolates the build's own cost).

    Texts it was not given (the anchors in the memory runs) get a fixed random unit vector.
    """

    def __init__(self, texts, vectors, fingerprint):
        import numpy as np

        self._rows = {t: i for i, t in enumerate(texts)}
        self._vectors = vectors
        self.fingerprint, self.dimension = fingerprint, vectors.shape[1]
        self.device, self.precision, self.max_seq_length = "cpu", "float32", None
        self._np = np

    def _vector(self, text):
        row = self._rows.get(text)
        if row is not None:
            return self._vectors[row]
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = self._np.random.default_rng(seed).standard_normal(self.dimension).astype(self._np.float32)
        return v / self._np.linalg.norm(v)

    def encode_batch(self, texts):
        return self._np.stack([self._vector(t) for t in texts])

    def token_counts(self, texts):
        return self._np.zeros(len(texts), dtype=self._np.int64)


def synthetic(n: int):
    """`n` texts and random unit vectors (float32, made in chunks: no float64 peak)."""
    import numpy as np

    rng = np.random.default_rng(0)
    vectors = np.empty((n, DIMENSION), dtype=np.float32)
    for start in range(0, n, 10_000):
        block = rng.standard_normal((min(10_000, n - start), DIMENSION), dtype=np.float32)
        vectors[start:start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return [f"background sentence number {i}" for i in range(n)], vectors


def memory_child(n: int, pairs: int) -> dict:
    """Peak memory of building a profile from `n` precomputed embeddings, in this process."""
    import scipy.stats  # noqa: F401  (imported once per process; the app does it while loading the model)

    from calibsim_gui.core.embedding.model_folders import ModelFingerprint
    from calibsim_gui.core.calibration.profile_builder import build_profile
    from calibsim_gui.core.calibration.profile_settings import ProfileSettings

    texts, vectors = synthetic(n)
    embedder = PrecomputedEmbedder(texts, vectors, ModelFingerprint("synthetic", "0" * 64))
    before, peak_before = common.rss_mb(), common.peak_rss_mb()
    seconds, profile = common.timed(build_profile, embedder, texts, ProfileSettings(n_pairs=pairs))
    peak = common.peak_rss_mb()
    return {"sentences": n, "pairs": profile.background_pairs, "build_s": round(seconds, 3),
            "rss_before_build_mb": round(before, 1), "peak_before_build_mb": round(peak_before, 1),
            "peak_rss_mb": round(peak, 1), "peak_increase_mb": round(peak - before, 1),
            "embeddings_mb": round(vectors.nbytes / 1e6, 1)}


def main() -> None:
    args = common.arguments(__doc__, quick_help="50 sentences, 1,000 pairs; memory with 200 and 400")
    if args.child:
        common.child_answer(memory_child(**json.loads(args.child)))
        return
    n, pairs = (50, 1000) if args.quick else (20_000, 20_000)
    import scipy.stats  # noqa: F401  (imported once per process; the app does it while loading the model)

    from calibsim_gui.core.references.anchors import builtin_anchors
    from calibsim_gui.core.embedding.encoding import encode_texts
    from calibsim_gui.core.calibration.profile_builder import build_profile
    from calibsim_gui.core.calibration.profile_settings import ProfileSettings

    texts = common.agnews_texts(n)
    embedder = common.builtin_embedder("float32")
    embedder.encode_batch(["warm up"] * 8)
    settings = ProfileSettings(n_pairs=pairs)
    included_s, _ = common.timed(build_profile, embedder, texts, settings, batch_size=64)
    anchors = builtin_anchors()
    known = texts + [p.text_a for p in anchors.pairs] + [p.text_b for p in anchors.pairs]
    vectors = encode_texts(embedder, known).embeddings
    precomputed = PrecomputedEmbedder(known, vectors, embedder.fingerprint)
    excluded_s, profile = common.timed(build_profile, precomputed, texts, settings)
    timing = {"sentences": n, "pairs": profile.background_pairs,
              "encoding_included_s": round(included_s, 2), "encoding_excluded_s": round(excluded_s, 3)}
    common.print_table([timing])
    print()
    memory = [common.run_child("background_build.py", {"n": size, "pairs": pairs})
              for size in ((200, 400) if args.quick else (20_000, 100_000))]
    common.print_table(memory, ["sentences", "pairs", "build_s", "embeddings_mb", "rss_before_build_mb",
                                "peak_rss_mb", "peak_increase_mb"])
    common.save("background_build", args, {"timing": timing, "memory_precomputed": memory})


if __name__ == "__main__":
    main()
