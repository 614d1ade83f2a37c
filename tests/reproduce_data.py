"""Files laid out as a user's for the Reproduce round trips: AG News and STS-B files that share
the name test.csv, STS-B-like labelled pairs to fit a human calibration on, a report folder."""

from pathlib import Path

import numpy as np
import pandas as pd

from tests.fakes import random_sentences


def write_user_files(root: Path) -> Path:
    """Write ``data/agnews/test.csv`` (a news corpus, a third of its texts with HTML leftovers),
    ``data/stsb/test.csv`` (30 pairs), ``data/stsb/train.csv`` (150 labelled pairs on 0-5) and an
    empty ``reports`` folder under `root`; returns `root`."""
    agnews, stsb = root / "data" / "agnews", root / "data" / "stsb"
    agnews.mkdir(parents=True)
    stsb.mkdir(parents=True)
    news = random_sentences(400, seed=8)
    news = [f"{t} &lt;b&gt;quot;{i}&#39;" if i % 3 == 0 else t for i, t in enumerate(news)]
    pd.DataFrame({"label": [i % 4 for i in range(400)], "text": news}).to_csv(agnews / "test.csv", index=False)
    texts = random_sentences(60, seed=31)
    pd.DataFrame({"score": np.linspace(0, 5, 30).round(2), "sentence1": texts[:30],
                  "sentence2": [t if i % 4 == 0 else texts[30 + i] for i, t in enumerate(texts[:30])]}
                 ).to_csv(stsb / "test.csv", index=False)
    train = random_sentences(300, seed=21)
    pd.DataFrame([(5.0 if i % 2 else 0.0, train[i], train[i] if i % 2 else train[i + 150]) for i in range(150)],
                 columns=["score", "sentence1", "sentence2"]).to_csv(stsb / "train.csv", index=False)
    (root / "reports").mkdir()
    return root
