"""Optional adapters that expose tradebench benchmarks to other evaluation frameworks.

Each adapter imports its framework lazily and says how to install it when it is missing:
`verifiers_env` (Prime Intellect verifiers, `pip install 'tradebench[verifiers]'`).
"""
