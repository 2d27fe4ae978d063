"""The CLI: help lists the built commands; bad input is one line on stderr and exit 2."""

import os
import subprocess
import sys

import pytest

from empirical.pipeline import cli


def run(*args):
    return subprocess.run([sys.executable, "-m", "empirical.pipeline.cli", *args], capture_output=True, text=True)


def test_help_lists_commands():
    r = run("--help")
    assert r.returncode == 0
    for name in cli.COMMANDS:
        assert name in r.stdout


def test_task_command_prints_exact_example():
    r = run("task", "--d", "5", "--L", "5", "--trigger", "3")
    assert r.returncode == 0, r.stderr
    assert "1/3" in r.stdout  # the trigger flag averaged over 3 positions


@pytest.mark.parametrize("args, needle", [(("task", "--d", "3"), "'d'"), (("task", "--L", "2"), "'L'"),
                                          (("task", "--trigger", "9"), "'trigger'")])
def test_bad_input_is_one_line_exit_2(args, needle):
    r = run(*args)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and needle in r.stderr and "Traceback" not in r.stderr


def test_cli_does_not_load_torch_for_exact_commands():
    code = "import sys; from empirical.pipeline import cli; cli.main(['task']); print('torch' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip().endswith("False"), r.stdout + r.stderr


POSITIONAL = {"certify": ["w.json"], "sweep": ["jobs.json"], "construct": ["relu"], "probe": ["smollm2"]}


@pytest.mark.parametrize("name", cli.COMMANDS)
def test_every_command_runs_on_one_thread_set_at_dispatch(name, monkeypatch):
    """Whatever torch's pool held before (2 here), each command runs with one
    torch thread and the OpenMP / BLAS variables its worker processes inherit say one."""
    import importlib

    import torch

    seen = {}

    def record(args):
        seen.update(torch=torch.get_num_threads(), omp=os.environ.get("OMP_NUM_THREADS"),
                    blas=os.environ.get("OPENBLAS_NUM_THREADS"))
        return 0

    monkeypatch.setattr(importlib.import_module(f"empirical.pipeline.commands.{name}"), "run", record)
    monkeypatch.delenv("SINKS_THREADS", raising=False)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, "2")
    torch.set_num_threads(2)
    try:
        assert cli.main([name, *POSITIONAL.get(name, [])]) == 0
    finally:
        torch.set_num_threads(1)
    assert seen == {"torch": 1, "omp": "1", "blas": "1"}


def test_sinks_threads_asks_for_more_up_to_the_owned_cores(monkeypatch, capsys):
    from empirical.host import device

    monkeypatch.setattr(device, "owned_cores", lambda: 3)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, "1")
    monkeypatch.setenv("SINKS_THREADS", "8")
    assert device.command_threads() == 3
    monkeypatch.setenv("SINKS_THREADS", "two")
    assert cli.main(["task"]) == 2
    assert capsys.readouterr().err.strip() == "sinks: error: SINKS_THREADS must be a positive integer " \
                                              "(threads per command), got 'two'"


@pytest.mark.parametrize("args, needle", [
    (("task", "--d", "x"), "argument --d: invalid int value: 'x'"),
    (("train", "--seeds", "a"), "argument --seeds: invalid int value: 'a'"),
    (("search", "--eps", "one"), "argument --eps: not a rational number: 'one'"),
    (("sweep", "jobs.json", "--backend", "bogus"), "argument --backend: invalid choice: 'bogus'"),
    (("certify",), "the following arguments are required: weights"),
    (("nosuch",), "invalid choice: 'nosuch'"),
    (("task", "--bogus"), "unrecognized arguments: --bogus"),
])
def test_every_argparse_error_is_one_line_exit_2(args, needle, capsys):
    """argparse's errors, like the project's, are one line (no usage block)."""
    with pytest.raises(SystemExit) as e:
        cli.main(list(args))
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and needle in err and "usage:" not in err, err


def test_help_shows_every_default_and_every_device_defaults_to_auto():
    """Every option with a default says it in --help; every --device defaults to auto."""
    import argparse

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    devices = {}
    for name, parser in sub.choices.items():
        formatter = parser._get_formatter()
        for action in parser._actions:
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
                assert "default" in formatter._get_help_string(action), (name, action.dest)
            if action.dest == "device":
                devices[name] = action.default
        assert "(default: " in " ".join(parser.format_help().split()), name
    assert devices and set(devices.values()) == {"auto"}, devices
