"""A tiny random BERT in a sentence-transformers folder: the built-in tokenizer (30,522 ids), 2
layers of width 16, mean pooling and Normalize. It loads, exports to ONNX and encodes in well
under a second, so tests of model folders and graphs need not load the real model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

TINY_MAX_LENGTH = 32
_TOKENIZER_FILES = ("special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt")


def write_tiny_model(folder, *, transformer_path: str = "", seed: int = 0) -> Path:
    """Write the tiny model into `folder`, its Transformer module (weights, config and tokenizer)
    in `transformer_path` (the root by default); `seed` picks the random weights."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel

    from calibsim_gui.core.embedding.model_folders import builtin_model_path

    folder = Path(folder)
    source = builtin_model_path()
    transformer = folder / transformer_path
    transformer.mkdir(parents=True, exist_ok=True)
    for name in _TOKENIZER_FILES:
        shutil.copyfile(source / name, transformer / name)
    config = BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    torch.manual_seed(seed)
    model = BertModel(config).eval()
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(transformer / "model.safetensors"))
    config.save_pretrained(transformer)
    (transformer / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": TINY_MAX_LENGTH, "do_lower_case": False}))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 16, "pooling_mode_mean_tokens": True}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": transformer_path, "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    return folder
