"""Attention kinds from other packages: a tiny plug-in package written to a temporary folder
with an entry-point dist-info (what ``pip install --target`` leaves behind), put on PYTHONPATH,
and run through the ``sinks`` commands in a fresh process; a kind whose exact and torch forms
disagree is refused with the largest difference, exit status 2."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from constructions import attention, plugins
from constructions.errors import BadInput

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = '''
import torch
from constructions.attention import AttentionKind

def exact(scores, i, ops, extras):  # squared ReLU, divided like relu by max(i, 1)
    return [ops.relu(s) * ops.relu(s) / max(i, 1) for s in scores]

def fast(scores, mask, extras):
    L = scores.shape[-1]
    return torch.relu(scores) ** 2 * mask / torch.arange(L, dtype=scores.dtype).clamp(min=1).unsqueeze(-1)

SQRELU = AttentionKind("sqrelu", exact, fast, normalised=False, can_abstain=True,
                       prediction="no sink needed: a row of scores <= 0 is all zero")

def off_by(delta):
    return AttentionKind("off", exact, lambda s, m, e: fast(s, m, e) + delta * m, normalised=False,
                         can_abstain=True, prediction="no sink needed: test kind")

SLIGHTLY_OFF = off_by(0.75 * {tol})  # accepted: within the tolerance
TOO_FAR_OFF = off_by(1.5 * {tol})  # refused
NOT_A_KIND = 42
'''


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    (root / "mykinds").mkdir()
    (root / "mykinds" / "__init__.py").write_text(PLUGIN.format(tol=plugins.FORMS_TOLERANCE))
    dist = root / "mykinds-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mykinds\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[sinks.kinds]\nsqrelu = mykinds:SQRELU\nbroken = mykinds:TOO_FAR_OFF\n")
    return root


def _sinks(plugin_dir: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{plugin_dir}", MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "empirical.pipeline.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_sinks_beyond_runs_a_kind_from_an_entry_point_and_from_an_import_path(plugin_dir, tmp_path):
    """Two runs (so the sweep's spawned workers must find the kinds again by name)."""
    r = _sinks(plugin_dir, "beyond", "--kinds", "sqrelu,mykinds:SQRELU", "--seeds", "1", "--max-steps", "5",
               "--out", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| sqrelu") or line.startswith("| mykinds:SQRELU")]
    assert len(rows) == 2 and all("no sink needed: a row of scores <= 0 is all zero" in row for row in rows)
    records = list((tmp_path / "runs" / "beyond").glob("*.json"))
    assert len(records) == 2  # both trained and kept


def test_other_commands_take_plug_in_kinds(plugin_dir, tmp_path):
    r = _sinks(plugin_dir, "train", "--kind", "sqrelu", "--seeds", "0", "--max-steps", "3", "--quiet",
               "--out", str(tmp_path / "t.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert '"kind": "sqrelu"' in (tmp_path / "t.json").read_text()


def test_a_plug_in_whose_forms_disagree_is_refused_naming_the_difference(plugin_dir, tmp_path, monkeypatch):
    r = _sinks(plugin_dir, "beyond", "--kinds", "broken", "--seeds", "1", "--max-steps", "5",
               "--out", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "attention kind 'broken' refused" in lines[0] and "differ by 1.5e-09" in lines[0]
    assert not (tmp_path / "runs").exists()  # no partial output
    monkeypatch.syspath_prepend(str(plugin_dir))  # the same lookup, in this process, by import path
    for name, message in (("mykinds:TOO_FAR_OFF", "refused: its exact and torch forms differ by 1.5e-09"),
                          ("mykinds:NOT_A_KIND", "is a int, not a constructions.attention.AttentionKind"),
                          ("nosuchpkg:KIND", "cannot be imported")):
        with pytest.raises(BadInput, match=message):
            attention.get(name)
        assert name not in attention.names()  # nothing refused is registered


def test_forms_tolerance_is_pinned(plugin_dir, monkeypatch):
    """0.75 x tolerance is accepted and 1.5 x refused: halving or doubling FORMS_TOLERANCE flips one."""
    monkeypatch.syspath_prepend(str(plugin_dir))
    import mykinds

    float_ops = attention.ops("float")
    slight, _ = plugins.forms_disagreement(mykinds.SLIGHTLY_OFF, float_ops)
    far, where = plugins.forms_disagreement(mykinds.TOO_FAR_OFF, float_ops)
    assert slight == pytest.approx(0.75 * plugins.FORMS_TOLERANCE, rel=1e-3)
    assert far == pytest.approx(1.5 * plugins.FORMS_TOLERANCE, rel=1e-3) and "query" in where
    plugins.refuse_if_forms_disagree("slight", mykinds.SLIGHTLY_OFF, float_ops)
    with pytest.raises(BadInput, match="refused"):
        plugins.refuse_if_forms_disagree("far", mykinds.TOO_FAR_OFF, float_ops)


def test_every_built_in_kind_passes_the_load_check():
    for name in ("softmax", "relu", "softmax1", "sink_logit", "sigmoid", "gated", "sigmoid_norm", "softpick"):
        diff, where = plugins.forms_disagreement(attention.get(name), attention.ops("float"))
        assert diff <= plugins.FORMS_TOLERANCE / 1000, (name, diff, where)
