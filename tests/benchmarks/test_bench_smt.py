"""SMT timings (pytest tests/benchmarks/test_bench_smt.py --benchmark-enable --benchmark-only; the size table needs
SINKS_SLOW=1, the recheck cvc5). Each benchmark also checks the verdict, so a timing of a failed
proof never counts."""

import os
from fractions import Fraction as F

import pytest

from proofs.smt import recheck
from proofs.smt.encode import hull_lemma_script
from proofs.smt.hardkill import RLIMIT, SAFETY_S, Z3Runner
from proofs.smt.instance import reference_instance
from proofs.smt.search import search_counterexample

SLOW = os.environ.get("SINKS_SLOW") == "1"


def _once(benchmark, fn):
    return benchmark.pedantic(fn, rounds=1, iterations=1)


@pytest.mark.parametrize("k,n", [(2, 6), (2, 8)])
def test_bench_chain_proof(benchmark, k, n):
    r = _once(benchmark, lambda: search_counterexample(reference_instance(k, n, F(1, 100)), F(1, 2), "chain", SAFETY_S,
                                                       rlimit=RLIMIT))
    assert r.status == "proof"


@pytest.mark.skipif(not SLOW, reason="size table: set SINKS_SLOW=1")
@pytest.mark.parametrize("k,n", [(3, 6), (3, 8), (4, 6), (4, 8), (2, 10), (3, 10), (4, 10)])
def test_bench_chain_size_table(benchmark, k, n):
    r = _once(benchmark, lambda: search_counterexample(reference_instance(k, n, F(1, 100)), F(1, 2), "chain", 60))
    assert r.status in ("proof", "unknown")  # unknown is recorded, never counted as a proof
    benchmark.extra_info["status"] = r.status


@pytest.mark.skipif(not recheck.available("cvc5"), reason="cvc5 not installed (optional extra .[smt])")
def test_bench_recheck_cvc5(benchmark):
    r = _once(benchmark, lambda: search_counterexample(reference_instance(2, 6, F(1, 100)), F(1, 2), "chain", SAFETY_S,
                                                       recheck_with="cvc5", rlimit=RLIMIT,
                                                       recheck_rlimit=recheck.CVC5_RLIMIT))
    assert r.status == "proof" and r.recheck["disagree"] == 0
    benchmark.extra_info.update(r.recheck)


def test_bench_hull_lemma_32_positions(benchmark):
    def run():
        with Z3Runner(rlimit=RLIMIT) as runner:
            return runner.check(hull_lemma_script(32, F(1), F(1, 10), F(1, 100)).text(), SAFETY_S)

    assert _once(benchmark, run).result == "unsat"
