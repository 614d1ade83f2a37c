"""Batches by token count across a whole run (issue 20) vs character-sorted chunks, on STS-B test.

Before: how calibsim encoded a pairs file until issue 20 — chunk by chunk (512 pairs), each
chunk's new texts sorted by character length, in batches of 64. After: every distinct text of
the run sorted by token count, in batches of 64 (`calibsim_gui.core.embedding.encoding.token_batches`, as
`Scorer.iter_score` now does). Both plans go through the same `encode_batch` calls of the built-in
model (torch, float32, CPU), timed side by side (A B, B A, A B) in wall and CPU seconds (CPU
time moves less when other jobs share the cores); reported: padded / real tokens of each plan,
sentences and pairs per second of the encoding, the largest raw-cosine difference between the
plans, the tokenizer's time, and `score_pairs` end to end (no cache).

    .venv/bin/python benchmarks/batching.py [--quick]
"""

from __future__ import annotations

import time

import common

SIZES = {"full": None, "quick": 40}           # STS-B test pairs (None: all 1,379)
CHUNK_PAIRS = 512                             # the old loop's chunk of pairs
BATCH_SIZE = 64


def character_plan(texts_a: list[str], texts_b: list[str]) -> list[list[str]]:
    """The batches of the old loop: per chunk of pairs, its new texts by character length."""
    known: set[str] = set()
    batches = []
    for start in range(0, len(texts_a), CHUNK_PAIRS):
        chunk = texts_a[start:start + CHUNK_PAIRS] + texts_b[start:start + CHUNK_PAIRS]
        new = sorted(dict.fromkeys(t for t in chunk if t not in known), key=len)
        known.update(new)
        batches += [new[i:i + BATCH_SIZE] for i in range(0, len(new), BATCH_SIZE)]
    return batches


def token_plan(texts: list[str], counts) -> list[list[str]]:
    from calibsim_gui.core.embedding.encoding import token_batches

    return [[texts[i] for i in batch] for batch in token_batches(counts, BATCH_SIZE)]


def tokens(batches, count: dict[str, int]) -> dict:
    """Real tokens, tokens after padding each batch to its longest text, and their ratio."""
    real = sum(count[t] for b in batches for t in b)
    padded = sum(len(b) * max(count[t] for t in b) for b in batches)
    return {"batches": len(batches), "real_tokens": real, "padded_tokens": padded,
            "padded_over_real": round(padded / real, 3)}


def main() -> None:
    args = common.arguments(__doc__, quick_help="the first 40 STS-B test pairs, one round")
    repeats = 1 if args.quick else 3
    import numpy as np
    import pandas as pd

    from calibsim_gui.core.analysis.pairs import score_pairs
    from calibsim_gui.core.io.inputs import load_pairs
    from calibsim_gui.core.geometry.metrics import METRICS
    from calibsim_gui.core.embedding.models import load_model

    embedder = load_model(None, device="cpu", engine="torch")
    profile = common.builtin_profile()
    work = common.Path(common.tempfile.mkdtemp(prefix="calibsim-bench-"))
    frame = pd.read_csv(common.stsb_path("test"), dtype=str, keep_default_na=False)
    n = SIZES["quick" if args.quick else "full"] or len(frame)
    pairs_csv = common.write_pairs_csv(zip(frame["sentence1"][:n], frame["sentence2"][:n]), work / "stsb.csv")
    table = load_pairs(pairs_csv)
    texts_a, texts_b = (table.frame[c].tolist() for c in (table.text_a, table.text_b))
    distinct = list(dict.fromkeys(texts_a + texts_b))

    tokenize_s, counts = common.timed(embedder.token_counts, distinct)
    counts = np.minimum(counts, embedder.max_seq_length)          # the model pads to at most this
    count = dict(zip(distinct, counts.tolist()))
    plans = {"before: 512-pair chunks by characters": character_plan(texts_a, texts_b),
             "after: whole run by tokens": token_plan(distinct, counts)}

    for batches in plans.values():               # first calls at new shapes are slow: not timed
        embedder.encode_batch(batches[-1])
    cpu: dict[str, list[float]] = {name: [] for name in plans}      # CPU seconds: steadier on a busy machine

    def encode(name):
        start = time.process_time()
        vectors = {t: v for b in plans[name] for t, v in zip(b, embedder.encode_batch(b))}
        cpu[name].append(time.process_time() - start)
        return vectors

    timing = common.interleaved({name: (lambda name=name: encode(name)) for name in plans}, repeats)
    cosines = [METRICS["cosine"].pairs(np.stack([v[t] for t in texts_a]), np.stack([v[t] for t in texts_b]))
               for v in (t.pop("result") for t in timing.values())]
    start = time.process_time()
    score_s, scored = common.timed(score_pairs, table, embedder, profile, batch_size=BATCH_SIZE)
    score_cpu = time.process_time() - start

    rows, figures = [], {}
    for name, batches in plans.items():
        seconds = timing[name]["best_s"]
        figures[name] = {**tokens(batches, count), **timing[name], "cpu_runs_s": [round(c, 3) for c in cpu[name]],
                         "cpu_best_s": round(min(cpu[name]), 3),
                         "sentences_per_s": round(len(distinct) / seconds, 1),
                         "encode_pairs_per_s": round(n / seconds, 1)}
        rows.append({"plan": name, "padded/real": figures[name]["padded_over_real"],
                     "encode s (best)": seconds, "CPU s (best)": figures[name]["cpu_best_s"],
                     "sentences/s": figures[name]["sentences_per_s"], "pairs/s": figures[name]["encode_pairs_per_s"]})
    (before, after), (before_cpu, after_cpu) = ([figures[name][k] for name in plans] for k in ("best_s", "cpu_best_s"))
    per_round = [b / a for b, a in zip(*(timing[name]["runs_s"] for name in plans))]
    speedup = {"wall_best": round(before / after, 3), "cpu_best": round(before_cpu / after_cpu, 3),
               "wall_per_round": [round(r, 3) for r in per_round]}
    end_to_end = {"score_pairs_s": round(score_s, 3), "score_pairs_cpu_s": round(score_cpu, 3),
                  "pairs_per_s": round(n / score_s, 1), "pairs_per_cpu_s": round(n / score_cpu, 1),
                  # the same run with the old plan's encoding CPU time instead of the new one's
                  "before_estimated_pairs_per_cpu_s": round(n / (score_cpu - after_cpu + before_cpu), 1)}
    difference = float(np.abs(cosines[0] - cosines[1]).max())
    to_score_pairs = float(np.abs(scored.frame["cosine_raw"].to_numpy() - cosines[0]).max())
    common.print_table(rows)
    print(f"encoding faster by {speedup['wall_best']:.3f}x (best wall), {speedup['cpu_best']:.3f}x (best CPU), "
          f"{', '.join(f'{r:.2f}' for r in per_round)}x per round; tokenizing {len(distinct)} texts: "
          f"{tokenize_s:.3f} s ({tokenize_s / after:.1%} of the new encoding); score_pairs end to end "
          f"{score_s:.1f} s, {score_cpu:.1f} CPU s ({end_to_end['pairs_per_cpu_s']} pairs per CPU s, "
          f"before ~{end_to_end['before_estimated_pairs_per_cpu_s']}); largest raw-cosine difference "
          f"between plans {difference:.1e}, to score_pairs {to_score_pairs:.1e}")
    common.save("batching", args, {
        "pairs": n, "distinct_texts": len(distinct), "batch_size": BATCH_SIZE, "chunk_pairs": CHUNK_PAIRS,
        "engine": "torch", "plans": figures, "encode_speedup": speedup,
        "tokenize_s": round(tokenize_s, 4), "end_to_end": end_to_end,
        "max_cosine_difference_between_plans": difference,
        "max_cosine_difference_to_score_pairs": to_score_pairs,
    })


if __name__ == "__main__":
    main()
