"""Every command, given hostile values for its options and inputs, ends in exit code 0 or in
one `error:` line with a non-zero exit code, never a traceback.

The commands and their parameters are read from the app itself (`_commands`), so a new verb or
option is fuzzed without editing this file: each parameter draws from the hostile values of its
type (paths: missing, a folder, empty, binary, not YAML, YAML that is not a spec, a CSV with UTC
offsets, a dataset, a run folder, an existing file where a folder is written...; numbers: 0,
negative, NaN, infinity, overflow, huge; text: impossible and far-out dates, malformed URLs and
model names). Each invocation starts from a valid one (`_base`, where a command has one) with
one or two parameters replaced, in a fresh copy of the inputs, in-process (`CliRunner`); model
commands talk to a loopback server. Every parameter gets one value in a fixed sweep, then
hypothesis draws pairs of values (derandomized, so CI sees the same cases each run). Not run:
`demo` (a whole demo run) and `llm serve-local` (starts a model server); `data export-hf
--push` uploads (never given a value).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.data import load_dataset
from tradebench.llm.loopback import LoopbackServer, Reply

runner = CliRunner()
NOT_RUN = {"demo", "llm serve-local"}
NEVER_GIVEN = {("data export-hf", "--push")}

PATHS = (
    "nosuch",
    "folder",
    "empty.bin",
    "binary.bin",
    "text.txt",
    "bad.yaml",
    "list.yaml",
    "scalar.yaml",
    "offsets.csv",
    "dataset",
    "run",
    "backtest",
    "spec.yaml",
    "questions.jsonl",
    "probes.jsonl",
    "nosuch/deeper/x.json",
)
INTS = ("0", "-1", "99999999999", "x", "1.5")
FLOATS = ("0", "-1", "nan", "inf", "-inf", "1e400", "x")
TEXTS = (
    "",
    "x",
    "2024-13-45",
    "2024-02-30",
    "-1",
    "1999-01-01",
    "2099-12-31",
    "htp:/bad",
    "http://",
    "a=b",
    "openai:",
    ":m",
    "nan",
    " ",
)


@dataclass(frozen=True)
class Param:
    """One parameter of a command as the fuzzer sees it."""

    name: str
    """`--option`, or the argument's name for a positional argument."""
    positional: bool
    kind: str
    """`path`, `int`, `float`, `bool` or `text`."""
    multiple: bool


def _kind(annotation: object) -> str:
    text = str(annotation)
    for kind, marks in (
        ("path", ("Path",)),
        ("bool", ("bool",)),
        ("float", ("float",)),
        ("int", ("int",)),
    ):
        if any(m in text for m in marks):
            return kind
    return "text"


def _commands() -> dict[str, list[Param]]:
    """Every leaf command of the app (`data import`, `run`, ...) and its parameters."""
    root = typer.main.get_command(app)

    ctx = SimpleNamespace(meta={})  # what the lazy group reads while listing
    out: dict[str, list[Param]] = {}

    def walk(command: object, path: list[str]) -> None:
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*path, name])
            return
        params = []
        for p in command.params:
            if p.name in ("help", "install_completion", "show_completion"):
                continue
            annotation = getattr(getattr(p, "type_descriptor", None), "annotation", None)
            positional = p.param_type_name == "argument"
            name = p.name if positional else p.opts[0]
            params.append(Param(name, positional, _kind(annotation), "list[" in str(annotation)))
        out[" ".join(path)] = params

    walk(root, [])
    return out


COMMANDS = {
    name: [p for p in params if (name, p.name) not in NEVER_GIVEN]
    for name, params in _commands().items()
    if name not in NOT_RUN
}


def _base(url: str) -> dict[str, tuple[list[str], dict[str, str | None]]]:
    """A valid invocation of each command: positional arguments and options (None: a flag)."""
    model = {"--model": "openai:m", "--base-url": url}
    return {
        "backtest": (
            [],
            {
                "--dataset": "dataset",
                "--agent": "equal_weight",
                "--start": "2022-03-01",
                "--end": "2022-03-04",
                "--out": "out",
            },
        ),
        "run": (["spec.yaml"], {"--out": "out"}),
        "report": (["run"], {}),
        "leaderboard": (["run"], {"--out": "out", "--resamples": "50"}),
        "attribute": (["run"], {}),
        "baselines list": ([], {"--cache-dir": "folder"}),
        "baselines train": (["spec.yaml"], {"--data-dir": "folder"}),
        "data import": (["offsets.csv"], {"--out": "out", "--market": "cn"}),
        "data import-records": (["dataset"], {"--long": "records.csv"}),
        "data export": (
            ["dataset"],
            {
                "--out": "out",
                "--symbols": "SH600007",
                "--start": "2022-03-01",
                "--end": "2022-03-31",
            },
        ),
        "data pull": (
            [],
            {"--source": "nosuch", "--out": "out", "--start": "2024-01-02", "--end": "2024-01-05"},
        ),
        "data export-hf": ([], {"--out": "out", "--run": "run"}),
        "data synth": ([], {"--out": "out", "--names": "20", "--days": "40"}),
        "data info": (["dataset"], {}),
        "llm ping": (["openai:m"], {"--base-url": url, "--timeout": "5"}),
        "mcq build": (
            [],
            {
                "--out": "out.jsonl",
                "--dataset": "dataset",
                "--symbol": "SH600007",
                "--start": "2021-01-04",
                "--end": "2021-12-31",
                "--num-questions": "2",
            },
        ),
        "mcq check": (["questions.jsonl"], {}),
        "mcq eval": (
            ["questions.jsonl"],
            {"--out": "out", **model, "--mode": "no_tools", "--limit": "1"},
        ),
        "mcq report": (["results.parquet"], {}),
        "mcq mine": (
            [],
            {
                "--out": "out",
                "--generator": "openai:g",
                "--solver": "openai:s",
                "--base-url": url,
                "--rounds": "1",
                "--per-round": "1",
                "--dataset": "dataset",
                "--symbol": "SH600007",
                "--start": "2021-01-04",
                "--end": "2021-06-30",
            },
        ),
        "probe build": ([], {"--dataset": "dataset", "--out": "out.jsonl", "--n": "2"}),
        "probe run": (
            ["probes.jsonl"],
            {"--attacker": "openai:m", "--base-url": url, "--out": "out", "--limit": "1"},
        ),
        "probe report": (["out"], {}),
    }


def _pool(param: Param) -> tuple[str, ...]:
    return {"path": PATHS, "int": INTS, "float": FLOATS, "bool": ("",)}.get(param.kind, TEXTS)


def _args(
    command: str,
    base: tuple[list[str], dict[str, str | None]],
    changes: dict[Param, str],
    root: Path,
) -> list[str]:
    """The command line: the base invocation with `changes` applied, paths under `root`."""
    positional, options = list(base[0]), dict(base[1])
    arguments = [p for p in COMMANDS[command] if p.positional]
    for param, value in changes.items():
        if param.positional:
            index = arguments.index(param)
            positional += [""] * (index + 1 - len(positional))
            positional[index] = value
        else:
            options[param.name] = None if param.kind == "bool" else value
    path_options = {p.name for p in COMMANDS[command] if p.kind == "path"}
    args = command.split()
    for param, value in zip(arguments, positional, strict=False):
        args.append(str(root / value) if param.kind == "path" and value else value)
    for name, value in options.items():
        if value is None:
            args.append(name)
        else:
            args += [name, str(root / value) if name in path_options and value else value]
    return args


def assert_clean(result: object, args: list[str]) -> None:
    """Exit 0, or one `error:` line and a non-zero exit; never a traceback."""
    shown = f"tradebench {' '.join(args)}\n{result.output}"
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), f"{shown}\n{exc!r}"
    assert "Traceback" not in result.output, shown
    if result.exit_code == 0:
        return
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, shown


def _replies(request: object) -> Reply:
    """One short answer for every model call (mcq, probe, ping, mining alike)."""
    return Reply.say("Answer: B")


def _inputs(root: Path, dataset: Path, url: str) -> None:
    """The files the fuzzer points commands at, built once through the commands themselves."""
    shutil.copytree(dataset, root / "dataset")
    (root / "folder").mkdir()
    (root / "empty.bin").write_bytes(b"")
    (root / "binary.bin").write_bytes(bytes(range(256)) * 64)
    (root / "text.txt").write_text("not a table\n")
    (root / "bad.yaml").write_text("agents: [unclosed\n")
    (root / "list.yaml").write_text("- a\n- b\n")
    (root / "scalar.yaml").write_text("hello\n")
    (root / "offsets.csv").write_text(
        "date,symbol,open,high,low,close,volume\n"
        + "".join(
            f"2024-01-{d:02d}T07:00:00+08:00,{s},10,11,9,10.5,1000\n"
            for d in (2, 3, 4, 5)
            for s in ("SH600000", "SZ000001")
        )
    )
    (root / "records.csv").write_text(
        "record_id,kind,ts_event,symbols,title,body\n"
        "r1,news,2021-03-01T08:00:00+08:00,SH600007,up,it rose\n"
    )
    spec = {
        "dataset": str(root / "dataset"),
        "windows": [{"start": "2022-03-01", "end": "2022-03-04"}],
        "agents": [{"name": "ew", "baseline": "equal_weight"}],
    }
    (root / "spec.yaml").write_text(yaml.safe_dump(spec))
    base = _base(url)
    for command, target in (
        ("run", "run"),
        ("backtest", "backtest"),
        ("mcq build", "questions.jsonl"),
        ("probe build", "probes.jsonl"),
    ):
        positional, options = base[command]
        options = {**options, "--out": target} if "--out" in options else options
        args = _args(command, (positional, options), {}, root)
        result = runner.invoke(app, args)
        assert result.exit_code == 0, f"{args}\n{result.output}"
    args = _args("mcq eval", base["mcq eval"], {}, root)
    assert runner.invoke(app, args).exit_code == 0
    shutil.copy(root / "out" / "results.parquet", root / "results.parquet")
    shutil.rmtree(root / "out")


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(responder=_replies) as running:
        yield running


@pytest.fixture(scope="module")
def inputs(
    synth_dataset_dir: Path, server: LoopbackServer, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    root = tmp_path_factory.mktemp("fuzz-inputs")
    _inputs(root, synth_dataset_dir, server.openai_url)
    return root


def _fresh(inputs: Path) -> Callable[[], Path]:
    def make() -> Path:
        work = Path(tempfile.mkdtemp(prefix="tb-fuzz-"))
        shutil.copytree(inputs, work, dirs_exist_ok=True)
        return work

    return make


PAIRS = [(name, p) for name, params in sorted(COMMANDS.items()) for p in params]


@st.composite
def invocations(draw: st.DrawFn) -> tuple[str, dict[Param, str]]:
    """A command and one or two of its parameters with hostile values."""
    command, first = draw(st.sampled_from(PAIRS))
    chosen = [first]
    if draw(st.booleans()):
        chosen.append(draw(st.sampled_from(COMMANDS[command])))
    return command, {p: draw(st.sampled_from(_pool(p))) for p in chosen}


def test_every_option_of_every_command_once(inputs: Path, server: LoopbackServer) -> None:
    """Each parameter of each command gets one hostile value (its pool taken in turn), so no
    option goes unfuzzed whatever the draws below pick; failures are listed together."""
    failures = []
    for i, (command, param) in enumerate(PAIRS):
        pool = _pool(param)
        work = _fresh(inputs)()
        try:
            base = _base(server.openai_url).get(command, ([], {}))
            args = _args(command, base, {param: pool[i % len(pool)]}, work)
            try:
                assert_clean(runner.invoke(app, args), args)
            except AssertionError as exc:
                failures.append(str(exc))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    assert not failures, "\n\n".join(failures)


@settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=invocations())
def test_no_command_ends_in_a_traceback(
    case: tuple[str, dict[Param, str]], inputs: Path, server: LoopbackServer
) -> None:
    command, changes = case
    work = _fresh(inputs)()
    try:
        base = _base(server.openai_url).get(command, ([], {}))
        args = _args(command, base, changes, work)
        assert_clean(runner.invoke(app, args), args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_every_command_is_fuzzed_from_a_valid_invocation(
    inputs: Path, server: LoopbackServer
) -> None:
    """The bases are valid (so each hostile value is what fails), and every command the app
    has is either fuzzed or listed as not run."""
    assert set(_commands()) - NOT_RUN == set(COMMANDS)
    assert set(_base(server.openai_url)) <= set(COMMANDS)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        # a pydantic validation error on a CLI value
        (
            "mcq build -o W/q.jsonl --dataset W/dataset --symbol SH600007 --num-questions 2 "
            "--commission-rate -1",
            "--commission-rate",
        ),
        # an unparseable date
        ("backtest --dataset W/dataset --agent cash --start -1 --end 2022-03-04 --out W/o", "date"),
        # a binary file
        ("mcq check W/binary.bin", "not UTF-8"),
        # start capital of zero (divided by in every return)
        (
            "backtest --dataset W/dataset --agent cash --start 2022-03-01 --end 2022-03-04 "
            "--out W/o --initial-cash 0",
            "positive",
        ),
        # -o naming a file
        ("run W/spec.yaml -o W/text.txt", "text.txt"),
        # YAML that is not a spec
        ("run W/list.yaml -o W/o", "invalid run spec"),
        # a usage error
        ("backtest --dataset W/dataset --agent cash --start", "--start"),
    ],
)
def test_the_reported_cases_are_one_line(inputs: Path, args: str, needle: str) -> None:
    work = _fresh(inputs)()
    try:
        argv = args.replace("W/", f"{work}/").split()
        result = runner.invoke(app, argv)
        assert_clean(result, argv)
        assert result.exit_code != 0
        line = next(x for x in result.output.splitlines() if x.startswith("error: "))
        assert needle in line, line
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_a_file_with_utc_offsets_imports_the_days_it_names(inputs: Path, tmp_path: Path) -> None:
    """`2024-01-02T07:00:00+08:00` is 2 January where it was written (1 January in UTC)."""
    out = tmp_path / "ds"
    args = ["data", "import", str(inputs / "offsets.csv"), "-o", str(out), "--market", "cn"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    days = sorted({str(d)[:10] for d in load_dataset(out).bars["date"]})
    assert days == ["2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"]
