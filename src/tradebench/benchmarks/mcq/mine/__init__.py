"""Mining questions with an LLM: the generator's blocks, sandboxed verification, the two
solver stages, and the JSONL database that grows run after run."""
