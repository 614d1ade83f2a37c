"""The derived second models load with calibsim's loader and behave like other real models."""

import pytest

from calibsim_gui.core.embedding.models import load_model
from tests.conftest import DATA
from tests.derived_models import agnews_sentences, random_pair_cosine

pytestmark = pytest.mark.slow


def test_derived_models_load_and_compressed_cosines_bunch_at_the_top(derived_model_dirs, real_embedder):
    texts = agnews_sentences(DATA / "agnews" / "test.csv", n=100)
    models = {kind: load_model(str(folder), device="cpu", precision="float32")
              for kind, folder in derived_model_dirs.items()}
    assert {m.info.source for m in models.values()} == {"local"}
    assert random_pair_cosine(models["compressed"], texts) > 0.6
    assert random_pair_cosine(real_embedder, texts) < 0.2
