"""``sinks prove [NAME ...]``: check the project's statements symbolically (sympy) and kernel-check
their Coq twins (``proofs/coq``) when ``coqc`` is on the PATH.

Prints one line per statement (name, verdict with what it rests on, e.g. "proved (sympy + Coq)",
seconds) and the kernel check's summary (coqc version, compile time), and writes ``results/proofs.json``
atomically with provenance. The file also carries the ``proofs`` part's claims and table
(``empirical.pipeline.parts.proofs``), so ``sinks report`` can use it; ``sinks reproduce`` reruns the
part over it, since its provenance differs. Planted false statements run too and must come out refuted.
Exit status 0 when every verdict is the one the suite states (``proofs.registry.EXPECTED``:
proved, except T2 and the tightened T1 constants refuted, questions (a') and (b) open, planted
statements refuted), 1 otherwise: a proof lost or an open question settled is reported, never
hidden. A statement is run together with every lemma it cites. Unknown names are bad input listing the valid ones.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prove", help="check the lemmas and theorems T1, T2, T3 symbolically and, with coqc, "
                                       "in the Coq kernel; write results/proofs.json")
    p.add_argument("names", nargs="*", metavar="NAME", help="statements to check (default: all)")
    p.add_argument("--out", default="results", help="results folder (default: results)")
    p.add_argument("--list", action="store_true", help="list the statement names and exit")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from constructions.files import provenance, write_json
    from empirical.pipeline.parts.proofs import claims_for, family_table_for_report, kernel_record
    from proofs import registry

    if args.list:
        print("\n".join(registry.names()))
        return 0
    names = args.names or None
    verdicts = registry.run(names)  # bad names raise BadInput before anything is written
    width = max(len(v.name) for v in verdicts)
    lwidth = max(len(v.label) for v in verdicts)
    print(f"{'statement':<{width}}  {'verdict':<{lwidth}}  {'seconds':>7}")
    for v in verdicts:
        mark = "  (planted false statement)" if v.planted else ""
        if v.status != registry.expected_status(v):
            mark += f"  (UNEXPECTED: the suite states {registry.expected_status(v)})"
        print(f"{v.name:<{width}}  {v.label:<{lwidth}}  {v.seconds:>7.2f}{mark}")
    by_name = {v.name: v for v in verdicts}
    kernel_tables, kernel = kernel_record(by_name)
    if kernel is not None:
        print(next(t["note"] for t in kernel_tables))
    record = {"part": "proofs", "status": "ok", "claims": claims_for(by_name),
              "tables": ([family_table_for_report(quick=True)] if "t1_single_layer_sink" in by_name else [])
              + kernel_tables,
              "verdicts": [v.to_dict() for v in verdicts], "kernel": kernel,
              "all_as_expected": all(v.status == registry.expected_status(v) for v in verdicts),
              "provenance": provenance({"names": names or "all"}, None, "cpu")}
    path = write_json(Path(args.out) / "proofs.json", record)
    print(f"wrote {path}")
    return 0 if record["all_as_expected"] else 1
