"""The Coq-checked minimum BOS mass of a trained single-layer head at the reference size
(SINKS_SLOW=1 pytest tests/benchmarks/test_bench_coq_certificate.py -s): seed 0 trained here to the
stop rule (~900 steps), its certificate at tol 1e-4 (~900 leaves), compiled by coqc; prints the
figures Coq checks beside the branch and bound's, the size and the times."""

import os
import time

import pytest

from constructions.numbers import format_down, format_up
from proofs.coq.certificate import check, export

from .conftest import FIGURES
from .test_bench_certify import trained_head


@pytest.mark.skipif(not os.environ.get("SINKS_SLOW"), reason="trains a head and runs coqc (~2-5 min): set SINKS_SLOW=1")
@pytest.mark.skipif(bool(check.available()), reason=check.available() or "coq present")
def test_bench_coq_certificate_trained_seed0():
    from proofs.certify.head import sink

    net = trained_head()
    start = time.process_time()
    cert = export.build(net, 16, tol=1e-4)
    build_cpu = time.process_time() - start
    python = sink.certify_head(net, 16)
    result = check.check(cert, "seed0")
    assert result.ok, result.reason
    assert cert.figure <= python["min_bos_nontrigger"] + 1e-12
    assert cert.trigger_figure >= python["max_bos_trigger"] - 1e-12
    FIGURES.append(f"Coq certificate, trained seed 0 (d = 16, L = 16): Coq checks min a_i0 >= {format_down(cert.q, 12)} "
                   f"(Python certificate {format_down(python['min_bos_nontrigger'], 12)}) and a_j0 <= "
                   f"{format_up(cert.p, 8)} (Python {format_up(python['max_bos_trigger'], 8)}); {cert.leaves} + "
                   f"{cert.trigger_leaves} leaves, depth {cert.depth} / {cert.trigger_depth}, "
                   f"{result.size['exp_facts']} exp facts, {result.size['certificate_lines']} lines / "
                   f"{result.size['certificate_bytes']} bytes; export {build_cpu:.1f} s CPU; coqc {result.cpu_seconds:.1f} s CPU "
                   f"({result.wall_seconds:.1f} s wall) + generic {result.size['generic_cpu_seconds']:.1f} s CPU")
    print(FIGURES[-1])
