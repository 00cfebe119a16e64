"""Optional adapters that expose tradebench benchmarks to other evaluation frameworks.

Each adapter imports its framework lazily and says how to install it when it is missing:
`verifiers_env` (Prime Intellect verifiers, `pip install 'tradebench[verifiers]'`);
`inspect_tasks` (inspect_ai tasks `tradebench/mcq`, `tradebench/portfolio`,
`tradebench/single_stock`, registered by the `inspect_ai` entry point;
`pip install 'tradebench[inspect]'`), built from `inspect_model`, `inspect_messages`,
`inspect_mcq` and `inspect_episodes`.
"""
