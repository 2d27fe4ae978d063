"""The README's test command is the one CI runs: ``.ci/run`` runs exactly the
pytest invocation of the README's set-up command 2, and benchmarks are untimed in it because
pyproject's addopts disables their timings (a timed run took 1279 s on a loaded machine)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_test_command() -> str:
    blocks = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)
    setup = [b for b in blocks if "pip install" in b and "-m pytest" in b]
    assert len(setup) == 1, "the README's set-up must have one test command"
    return setup[0].split("&&")[-1].strip()


def test_ci_runs_exactly_the_readme_test_command():
    command = _readme_test_command()
    assert command.startswith(".venv/bin/python -m pytest")
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if "-m pytest" in line and not line.lstrip().startswith("#")]
    assert ci[0] == command
    # then CI's AVX2 step: the same command on the tests that compare formulations' floats
    assert ci[1:] == [f"{command} tests/test_formulations.py tests/test_compiled.py"]
    assert "ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 SINKS_KERNEL_FLAGS=-mno-avx512f" in (ROOT / ".ci" / "run").read_text()


def test_the_default_run_does_not_time_benchmarks():
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "--benchmark-disable" in addopts.split()
