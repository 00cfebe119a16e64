"""llama.cpp's own grammar machinery on a schema, without running a model.

`to_grammar` is what the llama.cpp server does with a forced tool's schema (the Python
converter; when it raises, the server silently falls back to any-JSON). `NativeGrammar`
loads only the bundled model's vocabulary and feeds a text through llama.cpp's grammar
sampler token by token: whether the native parser takes the grammar (the converter can
emit rules it refuses), and whether the grammar lets a model write a given reply.
"""

from __future__ import annotations

import ctypes
import json
import math
from pathlib import Path
from typing import Any


def to_grammar(schema: dict[str, Any]) -> str:
    """The GBNF llama.cpp's server builds from a tool's schema (raises where it would fall
    back to plain JSON)."""
    from llama_cpp.llama_grammar import LlamaGrammar

    return LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)._grammar


class NativeGrammar:
    """A GGUF's vocabulary and llama.cpp's grammar sampler."""

    def __init__(self, model_path: Path) -> None:
        """Load the vocabulary only (no weights)."""
        import llama_cpp

        self._llm = llama_cpp.Llama(str(model_path), vocab_only=True, verbose=False)
        self._c = llama_cpp.llama_cpp

    def close(self) -> None:
        """Free the vocabulary."""
        self._llm.close()

    def tokens(self, text: str) -> list[int]:
        """`text` in the model's tokens."""
        return self._llm.tokenize(text.encode(), add_bos=False, special=False)

    def parses(self, gbnf: str) -> bool:
        """Whether llama.cpp's grammar parser takes `gbnf`."""
        sampler = self._c.llama_sampler_init_grammar(self._llm._model.vocab, gbnf.encode(), b"root")
        if not sampler:
            return False
        self._c.llama_sampler_free(sampler)
        return True

    def accepts(self, gbnf: str, text: str) -> bool:
        """Whether a model sampling under `gbnf` could write exactly `text` and stop."""
        c = self._c
        sampler = c.llama_sampler_init_grammar(self._llm._model.vocab, gbnf.encode(), b"root")
        assert sampler, "llama.cpp does not parse the grammar"
        try:
            eos = self._llm.token_eos()
            for token in [*self.tokens(text), eos]:
                data = (c.llama_token_data * 1)(c.llama_token_data(token, 0.0, 0.0))
                candidates = c.llama_token_data_array(data, 1, -1, False)
                c.llama_sampler_apply(sampler, ctypes.byref(candidates))
                if math.isinf(data[0].logit):
                    return False
                if token != eos:
                    c.llama_sampler_accept(sampler, token)
            return True
        finally:
            c.llama_sampler_free(sampler)
