"""The Ray executor: the local executor's plan, run across a cluster (optional `ray` extra)."""
