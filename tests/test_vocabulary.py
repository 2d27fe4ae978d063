"""One vocabulary of verdicts (``empirical.pipeline.reproduce.VERDICT_MEANINGS``): every verdict a part, the
report or a README's claims table uses is one of its words, and "refuted" (a counterexample) is
not used for a measurement that missed its criterion ("not met")."""

import ast
import json
from pathlib import Path

import pytest

from empirical.pipeline import published, reproduce
from empirical.pipeline.reproduce import VERDICT_MEANINGS, VERDICTS

ROOT = Path(__file__).resolve().parent.parent
# Every module that writes claims for the report (the parts and their helpers, all in parts/).
CLAIM_WRITERS = sorted((ROOT / "empirical" / "pipeline" / "parts").glob("*.py"))


def _verdict_literals(path: Path) -> list[tuple[int, str]]:
    """String constants written as a claim's verdict: the value of a "verdict" key in a dict
    literal, and what a function named *verdict* returns (through conditional expressions)."""
    tree = ast.parse(path.read_text())
    found = []

    def constants(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node
        elif isinstance(node, ast.IfExp):
            yield from constants(node.body)
            yield from constants(node.orelse)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                yield from constants(v)

    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "verdict":
                    found += [(c.lineno, c.value) for c in constants(v)]
        elif isinstance(node, ast.FunctionDef) and "verdict" in node.name:
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and ret.value is not None:
                    found += [(c.lineno, c.value) for c in constants(ret.value)]
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "verdict" for t in node.targets):
            found += [(c.lineno, c.value) for c in constants(node.value)]
    return found


def test_the_vocabulary_is_one_documented_list():
    assert VERDICTS == tuple(VERDICT_MEANINGS) and len(set(VERDICTS)) == len(VERDICTS)
    assert {"proved", "verified exactly", "observed", "not met", "refuted", "unknown"} <= set(VERDICTS)
    assert all(isinstance(m, str) and len(m) > 20 for m in VERDICT_MEANINGS.values())


@pytest.mark.parametrize("path", CLAIM_WRITERS, ids=lambda p: p.name)
def test_every_verdict_a_part_writes_is_in_the_vocabulary(path):
    for line, word in _verdict_literals(path):
        assert word in VERDICTS, f"{path.name}:{line}: verdict {word!r} is not in VERDICT_MEANINGS"


def test_the_scan_sees_the_verdicts_it_must():
    """The scan finds the training part's "not met" and the proofs part's computed verdicts; a
    scan that found nothing would pass the test above vacuously."""
    words = {w for p in CLAIM_WRITERS for _, w in _verdict_literals(p)}
    assert {"not met", "observed", "verified exactly", "refuted", "unknown", "failed"} <= words
    training = {w for _, w in _verdict_literals(ROOT / "empirical" / "pipeline" / "parts" / "training.py")}
    assert "not met" in training


def test_measurements_are_not_called_refuted():
    """A training claim whose criterion failed is "not met"; "refuted" stays for counterexamples."""
    from empirical.pipeline.parts import training

    head = {"bos_nontrigger_mean": 0.5, "sinks_gu": False}
    stack = {"config": {"kind": "softmax", "layers": 2, "heads": 2, "seeds": [0], "max_steps": 10, "L": 16},
             "eval": {"sequences": 1000}, "members": [{"converged": True, "layers": [[head, head], [head, head]]}]}
    assert training._t2_claim(stack, {})["verdict"] == "not met"


def test_the_report_header_defines_every_verdict(tmp_path):
    (tmp_path / "proofs.json").write_text(json.dumps({
        "part": "proofs", "status": "ok", "claims": [{"claim": "c", "verdict": "not met", "evidence": "e"}],
        "tables": [], "details": {}, "provenance": {"config": {"part": "proofs", "quick": True, "device": "cpu"}}}))
    report = reproduce.build_report(tmp_path).read_text()
    for word, meaning in VERDICT_MEANINGS.items():
        assert f"*{word}*: {meaning}" in report
    assert "**not met**" in report and "constructions/SPEC.md" in report


def test_the_readme_claims_table_starts_every_result_with_a_verdict():
    columns, rows = published._render_all(published.tracked.track(published.committed()["inputs"])[0])["claims"]
    for row in rows:
        verdict, result = row[columns.index("verdict")], row[columns.index("result")]
        assert result.startswith("not in this run") or any(verdict.startswith(v) for v in VERDICTS), verdict[:80]


def test_the_readmes_list_the_vocabulary():
    readme = (ROOT / "README.md").read_text()
    assert "proved / verified exactly / verified numerically / observed / not met / refuted / unknown / failed" in \
        " ".join(readme.split())
    assert " / ".join(VERDICTS) in " ".join(readme.split())


def _cited_tests(text: str) -> list[tuple[str, str]]:
    """(file, test function) of every "tests/x.py::name" citation, "::name" continuing the last file."""
    import re

    out, last = [], None
    for path, name in re.findall(r"(tests/[\w/]+\.py)?::(test_\w+)", text):
        last = path or last
        out.append((last, name))
    return out


def test_every_cited_test_exists():
    """The test column names tests that exist (in the README's claims table and in the claims the
    parts write), so a renamed test cannot leave a claim pointing at nothing."""
    import importlib

    columns, rows = published._render_all(published.tracked.track(published.committed()["inputs"])[0])["claims"]
    sources = ["\n".join(r[columns.index("how to check")] for r in rows)]
    for path in CLAIM_WRITERS:  # the modules' f"{TEST}::name" citations, with TEST filled in
        module = importlib.import_module(f"empirical.pipeline.parts.{path.stem}")
        text = path.read_text().replace("{PROVED}", "{TEST}::test_statement_is_proved")
        sources.append(text.replace("{TEST}::", f"{getattr(module, 'TEST', '')}::"))
    cited = [c for text in sources for c in _cited_tests(text) if c[0]]
    assert len(cited) > 20
    for path, name in cited:
        assert f"def {name}(" in (ROOT / path).read_text(), f"{path}::{name} is cited but does not exist"
