"""Deterministic numeric features computed from a point-in-time view, vectorised."""
