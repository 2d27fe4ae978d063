"""The CLI: help lists the built commands; bad input is one line on stderr and exit 2."""

import subprocess
import sys

import pytest

from empirical import cli


def run(*args):
    return subprocess.run([sys.executable, "-m", "empirical.cli", *args], capture_output=True, text=True)


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
    code = "import sys; from empirical import cli; cli.main(['task']); print('torch' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip().endswith("False"), r.stdout + r.stderr
