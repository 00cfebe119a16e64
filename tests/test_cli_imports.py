"""Start-up stays small: `tradebench --help` and an argument error import no data stack.

Module-set checks, not timings: the heavy libraries (pandas, pyarrow, plotly, backtrader,
numpy) load inside the command that needs them, and the help listing comes from the verb
registry without importing the verbs' modules. The registered summaries stay equal to the
first paragraph of each verb's own help, so the listing cannot drift from the commands.
"""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from tradebench.cli import VERBS, app

HEAVY = {"pandas", "pyarrow", "plotly", "backtrader", "numpy"}

_PROBE = """
import json, sys
from typer.testing import CliRunner
import tradebench.cli
after_import = sorted(m for m in sys.modules if m.startswith("tradebench"))
runner = CliRunner()
codes = {" ".join(a): runner.invoke(tradebench.cli.app, a).exit_code for a in ARGS}
after_run = sorted(m for m in sys.modules if m.startswith("tradebench"))
print(json.dumps({"after_import": after_import, "after_run": after_run, "codes": codes,
                  "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def _probe(args: list[list[str]]) -> dict:
    """Import the CLI in a fresh interpreter, invoke `args`, report the modules loaded."""
    code = _PROBE.replace("ARGS", json.dumps(args))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _imported_by_process(args: list[str]) -> set[str]:
    """Top-level packages a whole `python -m tradebench.cli ARGS` process imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tradebench.cli", *args],
        capture_output=True,
        text=True,
    )
    names = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "typer" in names, done.stderr[-2000:]  # the probe itself works
    return {n.split(".")[0] for n in names}


def test_importing_the_cli_and_its_help_load_no_verb_and_no_data_stack() -> None:
    out = _probe([["--help"]])
    assert out["codes"]["--help"] == 0
    assert not HEAVY & set(out["modules"])
    assert (
        out["after_import"]
        == out["after_run"]
        == [
            "tradebench",
            "tradebench.cli",
            "tradebench.cli.kit",
            "tradebench.cli.lazy",
            "tradebench.errors",
        ]
    )


def test_help_and_argument_errors_load_no_data_stack() -> None:
    args = [["--help"], *([v.name, "--no-such-option"] for v in VERBS)]
    args += [["mcq", "build", "--no-such-option"], ["data", "import", "--no-such-option"]]
    out = _probe(args)
    assert out["codes"]["--help"] == 0
    assert all(code == 2 for a, code in out["codes"].items() if a != "--help"), out["codes"]
    assert not HEAVY & set(out["modules"]), HEAVY & set(out["modules"])


def test_whole_process_help_and_argument_error_load_no_data_stack() -> None:
    for args in (["--help"], ["mcq", "build", "--no-such-option"]):
        loaded = _imported_by_process(args)
        assert not HEAVY & loaded, (args, HEAVY & loaded)


def _first_paragraph(text: str) -> str:
    import inspect

    return " ".join(inspect.cleandoc(text).split("\n\n")[0].split())


def test_registered_summaries_match_each_verbs_own_help() -> None:
    for verb in VERBS:
        command = verb.load()
        assert command.name == verb.name
        assert _first_paragraph(command.help or "") == " ".join(verb.summary.split()), verb.name


def test_help_lists_every_verb_and_verbs_dispatch() -> None:
    runner = CliRunner()
    listing = runner.invoke(app, ["--help"])
    assert listing.exit_code == 0
    for verb in VERBS:
        assert verb.name in listing.output
        assert " ".join(verb.summary.split())[:30] in " ".join(listing.output.split())
    typo = runner.invoke(app, ["mcqq"])
    assert typo.exit_code == 2 and "Did you mean 'mcq'" in typo.output
    group = runner.invoke(app, ["mcq", "--help"])
    assert group.exit_code == 0 and "build" in group.output and "check" in group.output


def test_argument_errors_do_not_build_pydantic_adapters_and_values_still_coerce() -> None:
    """Typer coerces through pydantic; an unknown option or a missing argument is reported
    before any value needs it, so pydantic stays unloaded, while a bad value is still refused
    by typer's own coercion with exit code 2."""
    missing = [["mcq", "build", "--no-such-option"], ["report"], ["data", "import", "--x"]]
    out = _probe(missing)
    assert all(code == 2 for code in out["codes"].values()), out["codes"]
    assert "pydantic" not in out["modules"]
    runner = CliRunner()
    bad = runner.invoke(app, ["mcq", "build", "--seed", "x"])
    assert bad.exit_code == 2 and "--seed" in bad.output and "integer" in bad.output
    good = runner.invoke(app, ["mcq", "build", "--seed", "7", "--help"])
    assert good.exit_code == 0
