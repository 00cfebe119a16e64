"""The broker side of the harness: the one day loop, its table rows and the backtest entry.

Benchmarks that trade through the simulated broker (portfolio, mandate, `tradebench
backtest`) run `engine.run_backtest` and write its tables with `store.write_run`; the rest
of `runs/` knows no broker.
"""
