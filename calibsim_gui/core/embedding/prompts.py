"""Prompts: the texts put before each text a model encodes, chosen from the folder or by the user."""

from __future__ import annotations

from dataclasses import dataclass

from calibsim_gui.core.embedding.model_folders import ModelInfo
from calibsim_gui.core.errors import ModelError


@dataclass(frozen=True)
class PromptSettings:
    """The texts calibsim puts before each text it encodes (sentence-transformers' ``prompt``).

    Attributes
    ----------
    symmetric : str
        Used for both sides of scored pairs, the anchors, the reference sentences and the
        background, so one profile's references and the scores it calibrates see the same prompt.
    query, document : str
        Used for search: the query side and the corpus side.
    name : str or None
        The folder's prompt name the symmetric prompt came from (None for none or a typed text).
    """

    symmetric: str = ""
    query: str = ""
    document: str = ""
    name: str | None = None

    def describe(self) -> str:
        """The symmetric prompt for people: ``'query: ' (prompt "query")`` or ``none``."""
        if not self.symmetric:
            return "none"
        return repr(self.symmetric) + (f" (prompt {self.name!r})" if self.name else "")

    def to_dict(self) -> dict:
        return {"symmetric": self.symmetric, "query": self.query, "document": self.document,
                "name": self.name}

    @classmethod
    def from_dict(cls, d) -> PromptSettings:
        d = d if isinstance(d, dict) else {}
        name = d.get("name")
        return cls(**{k: str(d.get(k) or "") for k in ("symmetric", "query", "document")},
                   name=name if isinstance(name, str) else None)


def choose_prompts(info: ModelInfo, *, prompt_name: str | None = None, query_prompt: str | None = None,
                   doc_prompt: str | None = None, no_prompt: bool = False) -> PromptSettings:
    """The prompts to use with `info`'s model: the folder's, unless the user chose otherwise.

    By default the symmetric prompt is the folder's ``default_prompt_name`` prompt, else its
    ``"query"`` prompt (e5's advice for symmetric tasks), else none; the query and document
    prompts are the folder's ``"query"`` and ``"document"`` (or ``"passage"``) prompts.

    Parameters
    ----------
    prompt_name : str, optional
        One of the folder's prompts, used as the symmetric prompt.
    query_prompt, doc_prompt : str, optional
        Texts used for search queries and documents instead of the folder's.
    no_prompt : bool
        Use no folder prompt at all (explicit `query_prompt`/`doc_prompt` still apply).

    Raises
    ------
    ModelError
        When `prompt_name` is not one of the folder's prompts, or is given with `no_prompt`.
    """
    prompts = dict(info.prompts or {})
    if prompt_name is not None and no_prompt:
        raise ModelError("Use either a prompt name (--prompt-name) or no prompt (--no-prompt), not both.")
    if no_prompt:
        symmetric, name, query, document = "", None, "", ""
    else:
        if prompt_name is not None:
            if prompt_name not in prompts:
                have = ", ".join(repr(n) for n in prompts) or "none"
                raise ModelError(f"The model {info.name} has no prompt named {prompt_name!r} (its "
                                 f"prompts: {have}). Fix: pick one of them, or pass --no-prompt.")
            name = prompt_name
        else:
            name = info.default_prompt_name if info.default_prompt_name in prompts else (
                "query" if "query" in prompts else None)
        symmetric = prompts[name] if name is not None else ""
        query = prompts.get("query", "")
        document = prompts.get("document") or prompts.get("passage") or ""
    return PromptSettings(symmetric=symmetric, name=name if symmetric else None,
                          query=query if query_prompt is None else query_prompt,
                          document=document if doc_prompt is None else doc_prompt)


def embedder_prompt(embedder) -> str:
    """The symmetric prompt `embedder` encodes with ("" for encoders that have none)."""
    return str(getattr(embedder, "prompt", "") or "")


class PromptedEmbedder:
    """The prompts of an embedder with a `prompts` attribute (`PromptSettings`), by side."""

    @property
    def prompt(self) -> str:
        """The symmetric prompt (scored pairs, anchors, background)."""
        return self.prompts.symmetric

    @property
    def query_prompt(self) -> str:
        return self.prompts.query

    @property
    def document_prompt(self) -> str:
        return self.prompts.document
