"""Evaluating models on a question file: letter parsing, the solvers (no tools / sandboxed
`run_python`), the run over K samples, the summary and the standalone report."""
