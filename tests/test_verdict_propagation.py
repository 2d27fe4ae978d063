"""Verdicts propagate along citations: a statement is proved only if every lemma it cites is
proved in the same run; citations are declared once per statement module; a cycle is an error."""

import pytest
import sympy

from proofs.statements import algebra
from proofs import registry
from proofs.registry import CitationError, Statement
from proofs.statements.verdict import timed


def _statement(name, cites=(), holds=True):
    """A toy statement whose own step closes (or not), citing ``cites``."""
    return Statement(name, lambda: timed(name, f"toy {name}", lambda ev: ev.step(holds, "own step"),
                                         cites=cites), tuple(cites))


def _toy_table(false_lemma: bool):
    return {s.name: s for s in (
        _statement("lemma", holds=not false_lemma),
        _statement("uses_lemma", ("lemma",)),
        _statement("uses_user", ("uses_lemma",)),
        _statement("independent"),
    )}


def test_a_planted_false_lemma_makes_every_citer_unknown_transitively():
    ok = {v.name: v for v in registry.run(table=_toy_table(false_lemma=False))}
    assert all(v.status == "proved" for v in ok.values())
    bad = {v.name: v for v in registry.run(table=_toy_table(false_lemma=True))}
    assert bad["lemma"].status == "unknown" and bad["independent"].status == "proved"
    assert bad["uses_lemma"].status == bad["uses_user"].status == "unknown"
    assert any("cites lemma, which is unknown in this run" in e for e in bad["uses_lemma"].evidence)
    assert any("cites uses_lemma, which is unknown" in e for e in bad["uses_user"].evidence)


def test_a_run_checks_the_cited_lemmas_first_even_when_not_requested():
    run = registry.run(["uses_user"], table=_toy_table(false_lemma=False))
    assert [v.name for v in run] == ["lemma", "uses_lemma", "uses_user"]


def test_a_citation_cycle_is_an_error():
    table = {s.name: s for s in (_statement("a", ("b",)), _statement("b", ("c",)), _statement("c", ("a",)))}
    with pytest.raises(CitationError, match="cycle: a -> b -> c -> a"):
        registry.run(table=table)
    with pytest.raises(CitationError, match="not a registered statement"):
        registry.run(table={"a": _statement("a", ("nowhere",))})


def test_registry_citations_must_match_the_checks_own():
    table = {"lemma": _statement("lemma"), "liar": Statement("liar", _statement("liar").check, ("lemma",))}
    with pytest.raises(CitationError, match="liar"):
        registry.run(table=table)


def test_a_citing_check_outside_a_run_is_never_proved():
    from proofs.statements import flag_sum_lower_bound

    v = flag_sum_lower_bound.check()  # its own certificates close, but no lemma is proved here
    assert v.status == "unknown"
    assert any("cites trigger_row_ratio_bound, which is not checked in this run" in e for e in v.evidence)


def test_a_lemma_atom_is_accepted_only_when_the_statement_cites_that_lemma():
    x = sympy.Symbol("x", real=True)
    atoms = [algebra.Atom("x", x, "lemma:some_lemma")]
    assert not algebra.certificate(x, [(1, ["x"])], atoms)[0]
    with algebra.citing(["other_lemma"]):
        assert not algebra.certificate(x, [(1, ["x"])], atoms)[0]
    with algebra.citing(["some_lemma"]):
        assert algebra.certificate(x, [(1, ["x"])], atoms)[0]


def test_a_false_content_flag_lemma_turns_every_statement_citing_it_unknown(monkeypatch):
    """The referee's experiment: a too-strong content-flag bound (5/6 - 2 eta, which its own
    certificate cannot close) with T1's f_pre adjusted to match, so that T1's own steps close."""
    from proofs.statements import content_flag_lower_bound as cf
    from proofs.statements import t1_single_layer_sink as t1

    eta = cf.tr.eta
    monkeypatch.setattr(cf, "lower_bound", lambda: sympy.Rational(5, 6) - 2 * eta)
    monkeypatch.setattr(t1, "content_flag_bound", cf.lower_bound)
    monkeypatch.setattr(t1, "f_pre", lambda x=eta: 12 * x / (5 - 6 * x))
    table = registry.statements()
    verdicts = {v.name: v for v in registry.run(table=table)}
    assert verdicts["content_flag_lower_bound"].status == "unknown"
    citers = [n for n in table if n != "content_flag_lower_bound" and "content_flag_lower_bound" in registry.dependencies(n, table)]
    assert "t1_single_layer_sink" in citers
    for name in citers:
        v = verdicts[name]
        assert v.status == "unknown", name
        own = [e for e in v.evidence if e.startswith("did not close") and "cites" not in e]
        assert name != "t1_single_layer_sink" or not own  # T1's own steps closed: only the lemma fails it
    assert any("cites content_flag_lower_bound, which is unknown in this run" in e
               for e in verdicts["t1_single_layer_sink"].evidence)
    assert verdicts["relu_construction_exact"].status == "proved"  # statements not citing it are untouched
