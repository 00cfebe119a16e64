"""Versioned prompt files shipped in the package, and the hash stored with every run."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from importlib import resources

from tradebench.errors import ConfigError


def texts_sha256(texts: Iterable[tuple[str, str]]) -> str:
    """SHA-256 over (name, text) pairs in the given order: the prompt set's identity."""
    digest = hashlib.sha256()
    for name, text in texts:
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()


def read_prompt_dir(package: str, version: str, required: Iterable[str] = ()) -> dict[str, str]:
    """Every `.md` file of `package/<version>/` by file name, sorted by name.

    Raises:
        ConfigError: The version folder is absent or lacks a required file.
    """
    root = resources.files(package).joinpath(version)
    if not root.is_dir():
        raise ConfigError(f"unknown prompt version {version!r} in {package}")
    texts = {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(root.iterdir(), key=lambda p: p.name)
        if p.name.endswith(".md")
    }
    missing = [n for n in required if n not in texts]
    if missing:
        raise ConfigError(f"prompt version {version!r} in {package} lacks {missing}")
    return texts
