"""``sinks search``: z3 search for a head that solves a finite instance within eps while putting
less than theta on BOS at some covered non-trigger query (T1 predicts none exists).

Prints the verdict (proof / counterexample / candidate / unknown; without ``--theta`` the
positive control: solution / proof / candidate / unknown), the time, the per-step certificate
with who vouches for each step (z3, an exactly checked LP certificate, with ``--recheck cvc5``
also cvc5), and for a SAT answer the replayed head. Writes ``results/smt.json`` atomically with
provenance. Exit status 1 when the second solver contradicts a step (the verdict is then unknown).
"""

from __future__ import annotations

import argparse
from fractions import Fraction


def _fraction(text: str) -> Fraction:
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"not a rational number: {text!r}") from None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="z3 search for sink-free heads on a finite instance (SMT); write results/smt.json")
    p.add_argument("--kind", default="softmax", help="attention kind from the registry (default softmax)")
    p.add_argument("--tokens", type=int, default=2, help="content token types K (one-hot, d = K + 3; default 2)")
    p.add_argument("--length", type=int, default=4, help="tokens after BOS (default 4)")
    p.add_argument("--eps", type=_fraction, default=Fraction(1, 100), help="max-abs error allowed (default 1/100)")
    p.add_argument("--theta", type=_fraction, default=None,
                   help="BOS-mass threshold of the violation; omit for the positive control (any head)")
    p.add_argument("--method", default=None, help="chain | reparam | pattern | free_pattern | scores "
                   "(default: chain for softmax / sigmoid_norm, pattern for softmax1 / sink_logit, scores otherwise)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per z3 query (hard-killed just after)")
    p.add_argument("--rlimit", type=int, default=None, metavar="UNITS",
                   help="z3 resource units per query (its rlimit; cvc5 with --recheck gets its rlimit-per from "
                        "proofs.smt.recheck.CVC5_RLIMIT): the verdict is then the same on every machine and "
                        "--timeout only a safety net; e.g. 10000000 (default: none, seconds alone)")
    p.add_argument("--emit-smt2", default=None, metavar="DIR", help="write every query as an SMT-LIB 2 file into DIR")
    p.add_argument("--covered", default="non_trigger", help="non_trigger (default) | pre_trigger")
    p.add_argument("--mean", default="inclusive", help="inclusive (reference) | exclusive")
    p.add_argument("--trigger-value", default="features", help="features (reference) | zero (abstract task)")
    p.add_argument("--bos-value", default="row", help="row (reference) | free | zero")
    p.add_argument("--many-triggers", action="store_true", help="any number of triggers (reference: exactly one)")
    p.add_argument("--sink-cap", type=_fraction, default=None, help="positive control: BOS mass <= CAP at covered queries")
    p.add_argument("--recheck", default=None, metavar="SOLVER",
                   help="re-solve every step's query with a second solver (cvc5, optional extra .[smt]); "
                        "a disagreement makes the verdict unknown and the exit status 1")
    p.add_argument("--out", default="results", help="results folder (default results)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from constructions import attention
    from constructions.errors import BadInput
    from constructions.files import provenance, write_json
    from proofs.smt.instance import reference_instance
    from proofs.smt.search import default_method, search_counterexample

    attention.get(args.kind)  # unknown kinds: one-line error listing the valid ones
    if args.timeout <= 0:
        raise BadInput(f"--timeout must be > 0, got {args.timeout}")
    if args.rlimit is not None and args.rlimit <= 0:
        raise BadInput(f"--rlimit must be > 0, got {args.rlimit}")
    if args.theta is not None and not 0 < args.theta <= 1:
        raise BadInput(f"--theta must be in (0, 1], got {args.theta}")
    method = args.method or default_method(args.kind)
    inst = reference_instance(args.tokens, args.length, args.eps, covered=args.covered, mean=args.mean,
                              trigger_value=args.trigger_value, bos_value=args.bos_value,
                              max_triggers=None if args.many_triggers else 1)
    from proofs.smt.recheck import CVC5_RLIMIT

    result = search_counterexample(inst, args.theta, method, args.timeout, kind=args.kind,
                                   emit_smt2=args.emit_smt2, sink_cap=args.sink_cap, recheck_with=args.recheck,
                                   rlimit=args.rlimit, recheck_rlimit=CVC5_RLIMIT if args.rlimit else None)
    print(inst.describe())
    question = f"BOS mass < {args.theta} at some covered non-trigger query" if args.theta is not None else \
        "any head solving the instance" + (f" with BOS mass <= {args.sink_cap}" if args.sink_cap is not None else "")
    print(f"question: {question}  (kind {args.kind}, method {method})")
    print(f"verdict: {result.status}  ({result.seconds:.2f} s, {len(result.steps)} queries, "
          f"{sum(s.result == 'unsat' for s in result.steps)} unsat)")
    if result.reason:
        print(f"reason: {result.reason}")
    if result.recheck:
        t = result.recheck
        print(f"recheck by {t['solver']}: {t['agree']} steps agree, {t['unknown']} {t['solver']} unknown, "
              f"{t['disagree']} disagree, {t['not rechecked']} not rechecked (no definite first answer); {t['seconds']:.1f} s")
    for s in result.steps:
        print(f"  {s.lemma:<20} {s.where:<45} {s.result:<8} {s.seconds:8.3f} s  [{s.checker}] {s.reason}")
    if result.model is not None and result.status in ("counterexample", "solution", "candidate"):
        print("\n".join(result.model.describe(inst)))
    if result.replay is not None:
        r = result.replay
        print(f"replay on all {r.sequences} sequences ({'exact' if r.exact else 'mpmath 50 digits'}): max error "
              f"{r.max_error} (eps {r.eps}), min BOS mass {r.min_bos_covered} at {' '.join(r.argmin_sequence)} "
              f"position {r.argmin_position}")
    record = {"search": result.summary(), "provenance": provenance(
        {"kind": args.kind, "tokens": args.tokens, "length": args.length, "eps": str(args.eps),
         "theta": None if args.theta is None else str(args.theta), "method": method, "timeout": args.timeout,
         "rlimit": args.rlimit,
         "covered": args.covered, "mean": args.mean, "trigger_value": args.trigger_value,
         "bos_value": args.bos_value, "many_triggers": args.many_triggers,
         "sink_cap": None if args.sink_cap is None else str(args.sink_cap), "recheck": args.recheck}, None, "cpu")}
    write_json(Path(args.out) / "smt.json", record)
    return 1 if result.recheck and result.recheck["disagree"] else 0
