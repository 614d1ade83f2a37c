"""calibsim: calibrated, globally interpretable similarity scores for text embeddings."""

import time

__version__ = "0.1.0"
PROCESS_START = time.perf_counter()   # for start-up timings (calibsim --screenshot)
