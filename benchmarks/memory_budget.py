"""Peak memory of ``calibsim score`` on long texts under a memory budget (#43).

100 pairs of ~300-word texts (STS-B sentences joined; ``--quick``: 20 pairs) are scored in fresh
processes with the built-in model (ONNX, no cache): under ``--memory-budget 300M``, truncating and
with ``--long-texts chunk`` (the run's encoder does not fit: it must be refused before encoding,
peak under 400 MB), and under ``1G`` with ``--batch-size 8`` (scored, peak under 1 GB). Each case
records its exit code, its refusal (if any) and its peak resident memory (``ru_maxrss``).
Last, a pairs file holding one text of 8 M words (``--quick``: 2 M) is scored under the default
budget: it must end within a minute, scored or refused, under 1 GB.

    .venv/bin/python benchmarks/memory_budget.py [--quick]
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

import common

CASES = {"300M, truncate": ["--memory-budget", "300M"],
         "300M, chunk": ["--memory-budget", "300M", "--long-texts", "chunk"],
         "1G, batch 8": ["--memory-budget", "1G", "--batch-size", "8"]}
TARGETS_MB = {"300M, truncate": 400, "300M, chunk": 400, "1G, batch 8": 1000, "one huge text": 1000}
HUGE_SECONDS = 60


def long_pairs(n: int, path: Path, words: int = 300) -> Path:
    """`n` pairs of texts of about `words` words: STS-B test sentences joined in a fixed order."""
    import pandas as pd

    frame = pd.read_csv(common.stsb_path("test"))
    sentences = frame["sentence1"].astype(str).tolist() + frame["sentence2"].astype(str).tolist()
    per_text = max(1, words * len(sentences) // sum(len(s.split()) for s in sentences))
    texts = [" ".join(sentences[(i * per_text) % len(sentences):][:per_text]) for i in range(2 * n)]
    pd.DataFrame({"sentence1": texts[:n], "sentence2": texts[n:]}).to_csv(path, index=False)
    return path


def huge_text_pairs(words: int, path: Path) -> Path:
    """A pairs file whose first text is STS-B test sentences repeated to `words` words."""
    import pandas as pd

    text = " ".join(pd.read_csv(common.stsb_path("test"))["sentence1"].astype(str))
    text = " ".join([text] * (words // len(text.split()) + 1))
    pd.DataFrame({"sentence1": [text, "Markets fell today."],
                  "sentence2": ["A cat sat on the mat.", "Stocks dropped."]}).to_csv(path, index=False)
    return path


def child(case: dict) -> None:
    """One ``calibsim score`` in this process; answers its exit code, message and peak memory."""
    from calibsim_gui.cli import main as calibsim

    err, start = io.StringIO(), time.perf_counter()
    with contextlib.redirect_stderr(err):
        code = calibsim(["score", case["pairs"], "--out", case["out"], "--force", "--quiet", "--no-cache",
                         *case["options"]])
    common.child_answer({"exit_code": code, "message": err.getvalue().strip()[:400],
                         "peak_mb": round(common.peak_rss_mb(), 1),
                         "seconds": round(time.perf_counter() - start, 1)})


def main() -> None:
    args = common.arguments(__doc__, quick_help="20 pairs")
    if args.child:
        child(json.loads(args.child))
        return
    work = Path(tempfile.mkdtemp(prefix="calibsim-bench-"))
    pairs = long_pairs(20 if args.quick else 100, work / "long.csv")
    graphs = {"CALIBSIM_ONNX_DIR": common.prepared_graphs()}
    huge = huge_text_pairs(2_000_000 if args.quick else 8_000_000, work / "huge.csv")
    rows = []
    for name, options in [*CASES.items(), ("one huge text", [])]:
        answer = common.run_child("memory_budget.py", {
            "pairs": str(huge if name == "one huge text" else pairs), "out": str(work / "out.csv"),
            "options": options}, env=graphs)
        within = answer["peak_mb"] < TARGETS_MB[name] and (
            name != "one huge text" or answer["seconds"] < HUGE_SECONDS)
        rows.append({"case": name, "exit_code": answer["exit_code"], "peak_mb": answer["peak_mb"],
                     "seconds": answer["seconds"], "target_mb": TARGETS_MB[name], "within": within,
                     "refusal": answer["message"].split(". Fix:")[0][-160:] if answer["exit_code"] else ""})
    common.print_table(rows, ["case", "exit_code", "peak_mb", "seconds", "target_mb", "within"])
    common.save("memory_budget", args, {"pairs_file_mb": round(pairs.stat().st_size / 1e6, 3),
                                        "huge_file_mb": round(huge.stat().st_size / 1e6, 1), "runs": rows,
                                        "targets_met": all(r["within"] for r in rows)})


if __name__ == "__main__":
    main()
