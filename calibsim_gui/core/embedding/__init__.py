"""Texts to vectors: model folders and their fingerprints, prompts, devices and precision, the
torch and ONNX Runtime engines (and the ONNX export), encoding, the embedding cache, long-text
chunking, and the languages of texts. `models.load_model` is the way in.

May import: `calibsim_gui.core.references`, `calibsim_gui.core.geometry`, `calibsim_gui.core.io`
and the shared modules. torch, sentence-transformers, onnxruntime and onnx are imported inside
the functions that need them.
"""
