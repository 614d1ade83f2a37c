"""calibsim: calibrated, globally interpretable similarity scores for text embeddings."""

__version__ = "0.1.0"
