"""`python -m tradebench.cli`: the same app as the `tradebench` command."""

from tradebench.cli import app

app()
