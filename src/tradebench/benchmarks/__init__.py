"""Benchmarks: one sub-package per benchmark (observation builder, tools, prompts, scoring)."""
