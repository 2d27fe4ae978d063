"""``python -m empirical.lm.crosscheck CHECK PROBE_OUT [options]``: recompute one of the probe's
figures independently, print (probe figure, independent figure, difference, tolerance) and exit
1 when any pair disagrees (0 when all agree; 2 on bad input, with nothing written).

CHECK is ``families`` (Sink_1^0.3 per input family), ``ablation`` (``--head``'s removed loss
change over ``--texts`` texts) or ``dormancy`` (dormant pairs, sinking heads, sinking heads
mostly dormant). ``--json FILE`` also writes the pairs, the options, versions and cost, atomically."""

from __future__ import annotations

import argparse
import json
import sys

import torch

from constructions.errors import BadInput
from constructions.files import provenance, write_atomic
from empirical.host import usage

from . import checks, source

CHECKS = ("families", "ablation", "dormancy")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # the project's bad-input rule: one line, exit 2
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m empirical.lm.crosscheck", description=__doc__.split("\n\n")[0])
    p.add_argument("check", choices=CHECKS)
    p.add_argument("probe_out", help="the probe's --out folder (or its probe.json)")
    p.add_argument("--families", default="natural,random,repeated", help="families: natural,random,repeated")
    p.add_argument("--head", default="L18H8", help="ablation: the head, e.g. L18H8")
    p.add_argument("--texts", type=int, default=32, help="ablation: the texts the probe averaged the head over")
    p.add_argument("--reference-texts", type=int, default=4, help="ablation: texts of the float64 rounding reference")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--json", default=None, help="also write the pairs here (JSON, atomic)")
    return p


def run(args) -> list:
    if args.texts < 1 or args.reference_texts < 1:
        raise BadInput("--texts and --reference-texts must be >= 1")
    if args.check == "ablation":  # the options against the record before the model loads
        checks.parse_head(args.head)
        checks.probed_ablation(source.read_record(args.probe_out), args.head, args.texts)
    probe = source.open_run(args.probe_out)
    if args.check == "families":
        return checks.families(probe, tuple(n for n in args.families.split(",") if n))
    if args.check == "ablation":
        return checks.ablation(probe, args.head, args.texts, args.reference_texts)
    return checks.dormancy(probe)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    meter = usage.Meter(sample=True)
    try:
        pairs = run(args)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    cost = meter.read()
    for p in pairs:
        print(p.line())
    print(f"cost: {usage.describe(cost)}")
    if args.json:
        record = {"check": args.check, "options": vars(args), "pairs": [
            {"name": p.name, "probe": p.probe, "independent": p.independent, "difference": p.difference,
             "tolerance": [p.low, p.high], "agrees": p.agrees} for p in pairs],
            "provenance": provenance(vars(args), source.FAMILY_SEED, "cpu"), "cost": cost}
        write_atomic(args.json, lambda f: json.dump(record, f, indent=1))
    return 0 if all(p.agrees for p in pairs) else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
