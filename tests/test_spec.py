"""constructions/SPEC.md, the project's specification: it is in the repository, its values agree
with the code (task layout, model, optimiser, reference results, metrics, attention kinds), and
every reference to it names a section it has."""

import re
import subprocess
from pathlib import Path

import pytest

from constructions import attention, task
from constructions.errors import BadInput

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "constructions" / "SPEC.md"
TITLES = {1: "The task", 2: "The model class", 3: "The claims", 4: "Reference experiments and their results",
          5: "Metrics", 6: "Attention kinds", 7: "Task variants"}


def _text() -> str:
    return SPEC.read_text()


def _section(n: int) -> str:
    text = _text()
    start = text.index(f"\n## {n}. ")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def _tables(section: str) -> list[list[list[str]]]:
    """The markdown tables of a section, each a list of rows of stripped cells (header first)."""
    tables, current = [], []
    for line in section.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(set(c) <= set("-:") for c in cells):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def _anchor(title: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")


def test_sections_are_numbered_and_stable():
    headings = re.findall(r"^## (\d+)\. (.+)$", _text(), flags=re.M)
    assert [(int(n), t) for n, t in headings] == list(TITLES.items())


def test_feature_layout_is_the_task_module():
    rows = {r[1]: r for r in _tables(_section(1))[0][1:]}
    assert rows["BOS flag"][0] == str(task.BOS_FLAG) and rows["trigger flag"][0] == str(task.TRIGGER_FLAG)
    assert rows["content (d - 3 values)"][0] == f"{task.CONTENT_START} .. d-2"
    assert rows["content flag"][0] == "d-1" and task.content_flag(16) == 15
    # the columns BOS / content token / trigger are the flags make_sequence writes
    X = task.make_sequence([[0.5], [0.25], [-1.0]], j=2)  # d = 4, L = 4
    for position, column in ((0, 2), (1, 3), (2, 4)):
        for flag, name in ((task.BOS_FLAG, "BOS flag"), (task.TRIGGER_FLAG, "trigger flag"), (3, "content flag")):
            assert str(X[position][flag]) == rows[name][column], (position, name)


def test_sizes_and_trigger_range_are_the_task_module():
    cfg = task.TaskConfig()
    assert (cfg.d, cfg.L) == (16, 16) and "d = 16, L = 16" in _section(1)
    assert list(cfg.trigger_positions) == list(range(2, 16)) and "{2, ..., L-1}" in _section(1)
    for bad in ({"d": 3}, {"L": 3}, {"trigger": 1}):
        with pytest.raises(BadInput):
            task.TaskConfig(**bad)


def test_model_and_training_values_are_the_code():
    from empirical.training.model import INIT_STD
    from empirical.training.train import TrainConfig

    assert f"N(0, {INIT_STD}^2)" in _section(2)
    values = dict(row for row in _tables(_section(4))[0][1:])
    one, many = TrainConfig(), TrainConfig(layers=2, heads=2)
    assert values["optimiser"] == f"Adam, betas {one.betas}, no weight decay"
    assert values["batch"].startswith(f"{one.batch} fresh sequences")
    assert float(re.fullmatch(r"the batch's max-abs error is below (\S+), checked every step",
                              values["stop rule"]).group(1)) == one.tol
    assert values["step cap"] == f"{one.max_steps:,}"
    assert float(values["learning rate, one layer"]) == one.lr and not one.residual
    assert float(values["learning rate, several layers"]) == many.lr and many.residual
    assert values["evaluation"] == f"{one.eval_sequences} sequences with the trigger at {one.eval_trigger}"


def test_reference_results_are_the_training_parts_values():
    from empirical.pipeline.parts.training import SPEC_VALUES

    rows = _tables(_section(4))[1]
    assert rows[0] == ["model", "steps to stop", "BOS mass at non-trigger queries"]
    written = {}
    for model, steps, mass in rows[1:]:
        kind, shape = model.split()
        layers, heads = map(int, shape.split("x"))
        written[(kind, layers, heads)] = (steps, mass)
    assert written == SPEC_VALUES


def test_metric_thresholds_are_the_code():
    from empirical.training.metrics import GU_EPS, GU_EPS_STRICT

    assert f"eps = {GU_EPS} by default ({GU_EPS_STRICT} in Barbero" in " ".join(_section(5).split())


def test_attention_kinds_are_the_registry():
    rows = _tables(_section(6))[0]
    assert rows[0][:4] == ["kind", "weights a_ik", "normalised", "can abstain"]
    listed = [r[0].split()[0].strip("`") for r in rows[1:]]
    registered = re.findall(r'register\(AttentionKind\(\s*name="(\w+)"', Path(attention.__file__).read_text())
    assert listed == registered  # every kind constructions/attention.py registers, in its order
    for row in rows[1:]:
        kind = attention.get(row[0].split()[0].strip("`"))
        assert row[2] == ("yes" if kind.normalised else "no"), kind.name
        assert row[3] == ("yes" if kind.can_abstain else "no"), kind.name
        assert row[4].startswith("sink needed" if not kind.can_abstain else "no "), kind.name


def test_task_variants_are_the_task_fields():
    fields = set(task.TaskConfig.__dataclass_fields__)
    for name in re.findall(r"\(`(\w+)=", _section(7)):
        assert name in fields, name


def _tracked_text_files():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout (an sdist): read the tree instead
        return [p for p in ROOT.rglob("*") if p.suffix in (".py", ".md", ".toml") and ".venv" not in p.parts]
    return [ROOT / f for f in out.stdout.split() if f.endswith((".py", ".md", ".toml")) or "/" not in f]


def test_every_reference_names_a_section_of_the_spec_in_the_repository():
    anchors = {_anchor(f"{n}. {t}") for n, t in TITLES.items()}
    for path in _tracked_text_files():
        if not path.is_file() or path == Path(__file__).resolve():
            continue
        text = path.read_text(errors="replace")
        assert "shared/SPEC" not in text, f"{path}: points at the development checkout's SPEC, not constructions/SPEC.md"
        for n in re.findall(r"SPEC(?:\.md)? sections? (\d+)", text):
            assert int(n) in TITLES, f"{path}: SPEC section {n} does not exist"
        for target, anchor in re.findall(r"\]\(([^)#]*SPEC\.md)(?:#([^)]*))?\)", text):
            assert (path.parent / target).resolve() == SPEC, f"{path}: link {target} does not reach constructions/SPEC.md"
            assert not anchor or anchor in anchors, f"{path}: no heading for #{anchor}"
