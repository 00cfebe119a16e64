"""A toy tradebench plugin: the `toy_plugin_switch` benchmark, the `toy_plugin_first_n`
agent and the `toy_plugin_fixed` provider, each registered by an entry point in
pyproject.toml."""
