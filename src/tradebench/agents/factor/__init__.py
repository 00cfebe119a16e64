"""Factor-model baselines: Alpha158-style training data, registered model types, a disk
cache of fitted models, signal quality, and the top-k dropout agent that trades them.

Importing `tradebench.agents.factor.agent` registers every model type as an agent."""
