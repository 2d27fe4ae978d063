"""``sinks certify WEIGHTS``: certify a head's sink (and error) over EVERY input, not a sample.

WEIGHTS is the project's JSON or npz, a safetensors file, a ``sinks train`` summary (one network
per seed) or a PyTorch state dict of the paper's original code (``torch.load(weights_only=True)``).
Prints per head and query position the certified minimum BOS mass with its witness, eta_up /
eta_lo and the T1 check beside the measured figures; writes ``certify.json`` (with provenance)
and ``certify.png`` (certified minimum beside the measured mean) into ``--out``. Everything is
computed before anything is written, so bad input leaves no partial output (exit 2). ``--coq``
adds each single-layer softmax head's minimum BOS mass checked by the Coq kernel
(``proofs/coq/certificate``). ``--stack-method`` picks a stack's certificate: the affine forms
(``box``, the default), the zonotopes (``zonotope``, softmax stacks), both side by side
(``both``), the affine forms with linearised mixtures (``linear``), or those with every deeper
layer's remainders read along the directions its scores meet them in (``directional``), and
with every key's attention-weight bounds also searched jointly over the query's content (``joint``).

d and the attention kind come from the file; a training summary also fixes L (its config's),
so the certificate is for the length the weights were trained at. ``--L`` other than that is an
override that the output's first line and ``certify.json``'s ``length`` record state; a
``--kind`` that disagrees with the file's is bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("certify", help="certify a head's BOS mass and error over every input (any weights)")
    p.add_argument("weights", help="weights: .json (project or sinks train summary), .npz, .safetensors, .pt/.pth/.bin")
    p.add_argument("--L", type=int, default=None,
                   help="sequence length including BOS (default: a training summary's own L, else 16, the "
                        "reference); an L other than the summary's is certified as an override, which the "
                        "output and certify.json state")
    p.add_argument("--kind", default=None, help="attention kind when the file does not say (default softmax); "
                                                "one that disagrees with the file's is bad input")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="only these seeds of a training summary")
    p.add_argument("--no-measure", action="store_true", help="skip the measured figures (no torch)")
    p.add_argument("--coq", action="store_true",
                   help="also check each single-layer softmax head's minimum BOS mass in Coq "
                        "(proofs/coq/certificate; needs coqc and the Interval library, else 'not run')")
    p.add_argument("--target-ratio", type=float, default=None,
                   help="refine eta_up until eta_up / eta_lo is at most this (>= 1; default 1.1): a smaller "
                        "target is tighter and costs more; the output says whether it was met")
    p.add_argument("--stack-method", choices=("box", "zonotope", "both", "linear", "directional", "joint"), default="box",
                   help="a stack's certificate: affine forms with interval remainders (box, default), zonotopes "
                        "(proofs/certify/stack/zono_stack.py; softmax only), both side by side, the affine "
                        "forms with linearised mixtures (linear), or those with the remainders read along the "
                        "scores' directions (directional; about 4-8 x linear's CPU), and with every key's weight "
                        "bounds searched jointly over the query's content (joint; about 2-3 x directional's CPU)")
    p.add_argument("--joint-nodes", type=int, default=None,
                   help="with --stack-method joint: boxes per joint search (default 20); every figure is certified "
                        "whatever the budget, a larger one is tighter and costs more")
    p.add_argument("--recheck", default=None, choices=("marabou",),
                   help="ask a second verifier at every query of each single-layer softmax head (marabou, optional "
                        "extra .[marabou]): no input below the certified minimum minus a margin (must be unsat), one "
                        "below the witness's weight plus a margin (must be sat, replayed exactly); a disagreement "
                        "makes the exit status 1")
    p.add_argument("--no-attack", action="store_true",
                   help="a stack: skip the search for each uncertified head's worst input (its bracket's upper end, "
                        "empirical/analysis/stack_attack.py; torch)")
    p.add_argument("--out", default="results/certify", help="folder for certify.json and certify.png")
    p.set_defaults(run=run)


def _fmt(x, digits: int = 6, side: str | None = None) -> str:
    """A cell: None "-", a float at ``digits`` significant digits on its ``side`` (a lower bound
    rounded down, an upper bound up, a measured figure to nearest: ``constructions.numbers``)."""
    from constructions.numbers import format_bound

    return "-" if x is None else (format_bound(x, digits, side) if isinstance(x, float) else str(x))


def _row(values: list, sides) -> str:
    return " | ".join(_fmt(v, side=side) for v, side in zip(values, sides))


def _print(label: str, cert: dict, rows: list, zonotope: dict | None = None) -> None:
    from empirical.analysis.certificates import COLUMN_SIDES, COLUMNS

    print(f"== {label}: {cert['kind']}, d = {cert['d']}, L = {cert['L']}, {cert['type']} ({cert['seconds']:.1f} s)")
    if cert["type"] == "relu head":
        print(f"  largest BOS weight over every input and query: {_fmt(cert['max_bos_weight'], side='upper')} (exact); "
              f"largest non-trigger row mass <= {_fmt(cert['max_row_mass_nontrigger'], 3, 'upper')}")
        return
    if cert["type"] == "stack":
        _print_stack(cert, rows, zonotope)
        return
    print(f"  CPU time {cert['cpu_seconds']:.1f} s")
    print("  " + " | ".join(COLUMNS))
    for r in rows:
        print("  " + _row(r, COLUMN_SIDES))
    worst = min((q for q in cert["queries"] if q["case"] != "trigger"), key=lambda q: q["certified"])
    print(f"  worst non-trigger query {worst['position']} ({worst['case']}): a_i0 >= "
          f"{_fmt(worst['certified'], 10, 'lower')}, witness a_i0 in [{_fmt(worst['witness_low'], 10, 'lower')}, "
          f"{_fmt(worst['witness_high'], 10, 'upper')}] (trigger at {worst['trigger']}, "
          f"query content {[round(v, 3) for v in worst['query_content']]}, other tokens {[round(v, 3) for v in worst['key_content']]})")
    print(f"  max BOS mass at the trigger <= {_fmt(cert['max_bos_trigger'], side='upper')}; all searches closed: "
          f"{cert['all_exact']} (largest gap {_fmt(cert['largest_gap'], 2, 'upper')})")
    e = cert["eta"]
    # the ratio says how loose the bracket is (a quality figure, not a bound on the head): nearest,
    # but against a target rounded to the side of the verdict, so that 1.104 "NOT met" against 1.1
    # prints as 1.11, not as the target itself
    side = None if e.get("target_met") is None else ("lower" if e["target_met"] else "upper")
    print(f"  eta_up {_fmt(e['eta_up'], side='upper')} ({e['attained_by']}), eta_lo {_fmt(e['eta_lo'], side='lower')} "
          f"(replayed witness, trigger {e['trigger']}), ratio {_fmt(e['ratio'], 3, side)}{_target(e)}")
    if cert.get("t1"):
        b = cert["t1"]["bounds"]
        print(f"  T1 at eta_up: (a) {'applies' if b['pre_applies'] else 'does not apply'} (eta <= 1/12) bound "
              f"{_fmt(b['pre_bound'], side='lower')}; (b) {'applies' if b['all_applies'] else 'does not apply'} "
              f"(eta <= 1/120) bound {_fmt(b['all_bound'], side='lower')}; overall: {cert['t1']['overall']}")


def _print_stack(cert: dict, rows: list, zonotope: dict | None) -> None:
    from empirical.analysis.certificates import first_below, stack_columns, stack_sides

    print("  per head the minimum over every trigger position and non-trigger query")
    print("  " + " | ".join(stack_columns(zonotope is not None)))
    for r in rows:
        print("  " + _row(r, stack_sides(zonotope is not None)))
    for c in [cert] + ([zonotope] if zonotope else []):
        level = c["sink_level"]
        print(f"  {c['stack_method']}: CPU time {c['cpu_seconds']:.1f} s; heads with a sink certified: "
              f"{c['non_vacuous_fraction']:.2f} (>= {level:g} at every non-trigger query)")
        if "non_vacuous_query_fraction" in c:
            print(f"    (head, query position) pairs certified >= {level:g}: {c['non_vacuous_query_fraction']:.2f}")
        if "stream_radius_after_trigger" in c:  # the zonotope's per-layer diagnostic: where the bound is lost
            radius = c["stream_radius_after_trigger"]["per_layer"]
            print("    mean radius per coordinate after the trigger entering each layer (contents / fresh symbols): "
                  + ", ".join(f"L{n} {a:.3g} / {b:.3g}" for n, (a, b, _) in enumerate(radius)))
        left = first_below(c)
        if left:
            print(f"    below {level:g} (head: first query, bound there; certified min): "
                  + ", ".join(f"{h}: {i}, {_fmt(v, 3, 'lower')}; {_fmt(m, 3, 'lower')}" for h, i, v, m in left))


def _print_brackets(br: dict) -> None:
    """Each uncertified head's bracket [certified minimum, worst input found]: the search and the
    exact replay of its worst input (the inputs are in certify.json)."""
    s = br["search"]
    c = br["counts"]
    if not br["heads"]:
        print("  every head certified: no worst input to search")
        return
    print(f"  brackets of the heads not certified, [certified min, worst input found, replayed exactly] "
          f"(search CPU {s['cpu_seconds']:.1f} s, replay {br['replay_cpu_seconds']:.1f} s): {c['refuted']} refuted, "
          f"{c['unknown']} unknown")
    from empirical.analysis.stack_attack import summary_line

    print("    " + summary_line(br))


def _target(e: dict) -> str:
    if e.get("target_met") is None:
        return ""
    met = "met" if e["target_met"] else "NOT met (eta_up is still a valid bound, only looser than asked)"
    return f"; target ratio {e['target_ratio']:g} {met}"


def resolve_length(asked: int | None, loaded) -> dict:
    """The length to certify at: the summary's own (every seed of one summary shares it), or
    ``--L``; an ``--L`` other than the trained one is an override, said in ``says``."""
    trained = sorted({item.L for item in loaded if item.L is not None})
    trained_L = trained[0] if len(trained) == 1 else None
    if asked is None:
        L, source = (trained_L, "the training summary") if trained_L is not None else (16, "the reference default")
    else:
        L, source = asked, "--L"
    override = asked is not None and trained_L is not None and asked != trained_L
    says = f"length: L = {L} (from {source})"
    if override:
        says = (f"length: L = {L} from --L, an OVERRIDE: these weights were trained at L = {trained_L}; "
                f"the certificate is for L = {L}")
    return {"L": L, "source": source, "trained_L": trained_L, "override": override, "says": says}


def _coq(net, L: int, cert: dict) -> dict:
    """The Coq-checked minimum BOS mass of a single-layer softmax head (proofs/coq/certificate),
    printed and recorded; other heads: 'not run' with the reason."""
    from proofs.coq.certificate import check, export

    if cert["type"] != "single head" or net.kind != "softmax":
        print("  Coq: not run (the Coq certificate covers single-layer softmax heads)")
        return {"ran": False, "reason": "covers single-layer softmax heads only"}
    try:
        coq = export.build(net, L)
    except export.Unclosed as e:  # fails closed: no certificate, so no Coq figure
        print(f"  Coq: not run ({e})")
        return {"ran": False, "reason": str(e)}
    result = check.check(coq, "head")
    from constructions.numbers import format_down, format_up

    figures = (f"min a_i0 >= {format_down(coq.q, 12)} at every non-trigger query, a_j0 <= {format_up(coq.p, 6)} at "
               f"the trigger")  # from the exact rationals the kernel checks, each on its safe side
    if not result.ran:
        print(f"  Coq: not run ({result.reason})")
    elif result.ok:
        print(f"  Coq, checked by the kernel: {figures} ({coq.leaves} + {coq.trigger_leaves} leaves, coqc "
              f"{result.cpu_seconds:.1f} s CPU)")
    else:
        print(f"  Coq: NOT checked ({result.reason}); the exported figures ({figures}) are unproved")
    return {**result.to_dict(), "figure": coq.figure, "figure_exact": str(coq.q),
            "trigger_figure": coq.trigger_figure, "trigger_figure_exact": str(coq.p),
            "python_figure": cert["min_bos_nontrigger"], "python_trigger_figure": cert["max_bos_trigger"]}


def _recheck(net, L: int, cert: dict) -> dict:
    """Marabou's two questions at every query of a single-layer softmax head, printed as a table
    (``proofs/marabou``); other heads, or without maraboupy: 'not run' with the reason."""
    from proofs.marabou import recheck

    if cert["type"] != "single head" or net.kind != "softmax":
        print("  Marabou: not run (the recheck covers single-layer softmax heads)")
        return {"ran": False, "reason": "covers single-layer softmax heads only"}
    if not recheck.available():
        print("  Marabou: not run (maraboupy not installed: pip install '.[marabou]')")
        return {"ran": False, "reason": "maraboupy not installed"}
    out = recheck.recheck_head(net, L, cert["queries"])
    t = out["tally"]
    print(f"  recheck by Marabou (margin {out['margin']:g} x min(a, 1 - a); {out['timeout_s']} s per call): "
          f"{t['agree']} questions agree, {t['unknown']} unknown, {t['DISAGREE']} DISAGREE; the native "
          f"softmax encoding unsat on {t['native unsat']} of {len(out['rows']) // 2} first questions ({out['seconds']:.1f} s)")
    print("  position | case | question | threshold | Marabou | verdict | native | boxes | seconds")
    for r in out["rows"]:
        print(f"  {r['position']} | {r['case']} | {r['question']} | {r['threshold']:.10g} | {r['answer']} | "
              f"{r['verdict']} | {r['native'] or '-'} | {r['boxes']} | {r['seconds']:.2f}"
              + (f" | {r['reason']}" if r["reason"] else ""))
    return {"ran": True, **out}


def _seeds(loaded) -> list[int] | None:
    """The seeds certified (a training summary's members are labelled "seed N"), else None."""
    labels = [item.label.split() for item in loaded]
    return [int(w[1]) for w in labels] if all(len(w) == 2 and w[0] == "seed" for w in labels) else None


def run(args: argparse.Namespace) -> int:
    from constructions import files
    from constructions.errors import BadInput
    from empirical.analysis import certificates
    from empirical import weights
    from proofs.certify.head import eta

    if args.L is not None and args.L < 4:
        raise BadInput(f"--L must be >= 4, got {args.L}")
    target_ratio = eta.TARGET_RATIO if args.target_ratio is None else args.target_ratio
    if not target_ratio >= 1:  # eta_up >= eta_lo always: a target below 1 cannot be met (NaN refused too)
        raise BadInput(f"--target-ratio must be >= 1 (eta_up / eta_lo), got {args.target_ratio}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out} is a file, not a folder")
    if args.joint_nodes is not None and (args.stack_method != "joint" or args.joint_nodes < 1):
        raise BadInput(f"--joint-nodes must be >= 1 and go with --stack-method joint, got {args.joint_nodes} "
                       f"with --stack-method {args.stack_method}")
    loaded = weights.load(args.weights, kind=args.kind, seeds=args.seeds)
    methods = ("box", "zonotope") if args.stack_method == "both" else (args.stack_method,)
    if "zonotope" in methods:
        other = sorted({i.network.kind for i in loaded if not certificates.is_single_head(i.network)} - {"softmax"})
        if other:
            raise BadInput(f"--stack-method {args.stack_method}: the zonotope certificate is softmax only, "
                           f"these stacks are {', '.join(other)}")
    length = resolve_length(args.L, loaded)
    L = length["L"]
    results = []
    for item in loaded:
        cert = certificates.certify_network(item.network, L, target_ratio=target_ratio, stack_method=methods[0],
                                            joint_nodes=args.joint_nodes)
        zonotope = (certificates.certify_network(item.network, L, stack_method="zonotope")
                    if cert["type"] == "stack" and len(methods) == 2 else None)
        measured = None if args.no_measure else certificates.measure(item.network, L)
        brackets = None
        if cert["type"] == "stack" and not args.no_attack:
            from empirical.analysis import stack_attack

            others = [zonotope] if zonotope else []
            brackets = stack_attack.brackets(item.network, L, cert, stack_attack.open_heads(cert, *others), others)
        rows = (certificates.comparison_rows(cert, measured) if cert["type"] == "single head"
                else certificates.stack_rows(cert, measured, zonotope, brackets) if cert["type"] == "stack" else [])
        if not results:
            print(length["says"])
        results.append({"label": item.label, "certificate": cert, "measured": measured, "table": rows})
        if zonotope:
            results[-1]["zonotope"] = zonotope
        if brackets:
            results[-1]["brackets"] = brackets
        _print(item.label, cert, rows, zonotope)
        if brackets:
            _print_brackets(brackets)
        if args.coq:
            results[-1]["coq"] = _coq(item.network, L, cert)
        if args.recheck:
            results[-1]["recheck"] = _recheck(item.network, L, cert)
    record = {"weights": str(args.weights), "length": length, "results": results, "columns": certificates.COLUMNS,
              "provenance": files.provenance({"weights": str(args.weights), "L": args.L, "kind": args.kind,
                                              "seeds": args.seeds, "measure": not args.no_measure,
                                              "coq": args.coq, "recheck": args.recheck,
                                              "target_ratio": target_ratio,
                                              "stack_method": args.stack_method, "joint_nodes": args.joint_nodes,
                                              "attack": not args.no_attack},
                                             _seeds(loaded)),
              "target_ratio": target_ratio}
    figure = certificates.heat_map(results, out / "certify.png")
    path = files.write_json(out / "certify.json", record)
    print(f"certificate: {path}\nfigure: {figure}")
    disagree = sum(r["recheck"]["tally"]["DISAGREE"] for r in results if r.get("recheck", {}).get("ran"))
    return 1 if disagree else 0
