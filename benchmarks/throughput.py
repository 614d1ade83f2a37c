"""Throughput ceiling of the built-in model on this CPU, calibsim's share of it, and cheap wins.

Ceiling: sentences/s of a bare ``SentenceTransformer.encode`` (the model object calibsim wraps;
batch 64, its own length sorting) on short (10-word) and long (100-word) AG News texts.
calibsim: ``score_pairs`` on pairs of the same texts (no cache; encoding, five metrics, every
calibration) as sentences/s, and its fraction of the ceiling. Cheap wins, each measured side by
side: torch threads, length sorting (batches in file order vs sorted), batch size, inference
mode vs plain autograd, float32 vs bfloat16.

    .venv/bin/python benchmarks/throughput.py [--quick]
"""

from __future__ import annotations

import common

SIZES = {"full": {"short": 2000, "long": 400, "mixed": 1500, "grad": 512, "bf16": 256},
         "quick": {"short": 8, "long": 2, "mixed": 8, "grad": 4, "bf16": 4}}


def word_texts(words: int, n: int) -> list[str]:
    """`n` distinct texts of exactly `words` words, cut from consecutive AG News texts."""
    stream = " ".join(common.agnews_texts(words * n)).split()     # each text has a word at least
    return [" ".join(stream[i * words:(i + 1) * words]) for i in range(n)]


def rate(n: int, seconds: float) -> float:
    return round(n / seconds, 1)


def main() -> None:
    args = common.arguments(__doc__, quick_help="a few texts per measurement")
    size = SIZES["quick" if args.quick else "full"]
    repeats = 1 if args.quick else 2
    import numpy as np
    import torch

    from calibsim_gui.core.analysis.pairs import score_pairs
    from calibsim_gui.core.io.inputs import load_pairs

    embedder = common.builtin_embedder("float32")
    bare = common.bare_model(embedder)
    profile = common.builtin_profile()
    bare.encode(["warm up"] * 8)
    texts = {"short": word_texts(10, size["short"]), "long": word_texts(100, size["long"])}
    work = common.Path(common.tempfile.mkdtemp(prefix="calibsim-bench-"))
    rows, ceiling = [], {}

    for kind, items in texts.items():
        pairs_csv = common.write_pairs_csv(zip(items[0::2], items[1::2]), work / f"{kind}.csv")
        table = load_pairs(pairs_csv)
        timing = common.interleaved({
            "bare": lambda: bare.encode(items, batch_size=64),
            "calibsim": lambda: score_pairs(table, embedder, profile, batch_size=64),
        }, repeats)
        ceiling[kind] = {"sentences": len(items),
                         "bare_sentences_per_s": rate(len(items), timing["bare"]["best_s"]),
                         "calibsim_sentences_per_s": rate(len(items), timing["calibsim"]["best_s"])}
        ceiling[kind]["fraction_of_ceiling"] = round(
            ceiling[kind]["calibsim_sentences_per_s"] / ceiling[kind]["bare_sentences_per_s"], 3)
        rows.append({"measure": f"{kind} ({len(items)} texts)",
                     "bare encode /s": ceiling[kind]["bare_sentences_per_s"],
                     "calibsim score_pairs /s": ceiling[kind]["calibsim_sentences_per_s"],
                     "fraction": ceiling[kind]["fraction_of_ceiling"]})
    common.print_table(rows)
    print()

    wins = {}
    mixed = common.agnews_texts(size["mixed"], offset=20_000)
    threads = torch.get_num_threads()
    options = {}
    for n in sorted({1, threads}):
        def encode_with(n=n):
            torch.set_num_threads(n)
            try:
                return bare.encode(mixed, batch_size=64)
            finally:
                torch.set_num_threads(threads)
        options[f"{n} thread(s)"] = encode_with
    wins["threads"] = common.interleaved(options, repeats)

    def batches(items):
        return [bare.encode(items[i:i + 64], batch_size=64) for i in range(0, len(items), 64)]

    by_length = sorted(mixed, key=len)
    wins["length_sorting"] = common.interleaved({
        "file order": lambda: batches(mixed), "sorted by length": lambda: batches(by_length)}, repeats)
    wins["batch_size"] = common.interleaved(
        {f"batch {b}": (lambda b=b: bare.encode(mixed, batch_size=b)) for b in (16, 32, 64, 128)}, repeats)

    grad_texts = mixed[:size["grad"]]

    def forward(context):
        with context():
            for i in range(0, len(grad_texts), 64):
                features = bare.preprocess(grad_texts[i:i + 64])
                bare(features)["sentence_embedding"].detach()

    wins["inference_mode"] = common.interleaved({
        "autograd on": lambda: forward(torch.enable_grad), "no_grad": lambda: forward(torch.no_grad),
        "inference_mode": lambda: forward(torch.inference_mode)}, repeats)

    bf16 = common.builtin_embedder("bfloat16")
    bf16_texts = texts["short"][:size["bf16"]]
    bf16.encode_batch(["warm up"] * 8)
    wins["precision"] = common.interleaved({
        "float32": lambda: embedder.encode_batch(bf16_texts),
        "bfloat16": lambda: bf16.encode_batch(bf16_texts)}, repeats)
    a, b = (np.asarray(wins["precision"][k]["result"], dtype=np.float64) for k in ("float32", "bfloat16"))
    agreement = float(np.min(np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)))

    sizes = {"threads": len(mixed), "length_sorting": len(mixed), "batch_size": len(mixed),
             "inference_mode": len(grad_texts), "precision": len(bf16_texts)}
    win_rows = []
    for name, variants in wins.items():
        base = next(iter(variants.values()))["best_s"]
        for variant, t in variants.items():
            t.pop("result")
            t["sentences_per_s"] = rate(sizes[name], t["best_s"])
            t["speed_vs_first"] = round(base / t["best_s"], 3)
            win_rows.append({"cheap win": name, "variant": variant, "texts": sizes[name],
                             "sentences/s": t["sentences_per_s"], "x first": t["speed_vs_first"]})
    common.print_table(win_rows)
    auto = common.builtin_embedder("auto")
    print(f"bfloat16 vs float32 embeddings: lowest cosine {agreement:.6f}; "
          f"precision auto picks here: {auto.precision_note}")
    common.save("throughput", args, {
        "ceiling": ceiling, "cheap_wins": wins,
        "bfloat16_lowest_cosine_to_float32": round(agreement, 6), "auto_precision": auto.precision_note,
        "calibsim_encode_defaults": {"batch_size": 64, "sorted_by_length": True, "inference_mode": True,
                                     "torch_threads": threads},
    })


if __name__ == "__main__":
    main()
