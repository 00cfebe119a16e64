"""Versioned persona prompt files; a run stores the hash of the set it used."""
