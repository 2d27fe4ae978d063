"""The named training setting ``worst-case``: single-layer softmax heads whose
CERTIFIED worst-case error lies inside T1(b)'s range eta <= 1/120, so that T1 applies in full.

The reference runs of SPEC section 4 (kept as they are) stop when one random batch of 128
sequences has max-abs error < 5e-3; that says nothing about the worst input, and their heads
have a certified worst-case error of 0.03-0.05 (a replayed witness 0.016-0.023): T1(b) can never
apply to them. This setting continues each reference head, trained first as the reference run
of its seed alone (the same ``TrainConfig``; in the training part's ensemble a member may stop a
few steps away from its single run, since ensembles of different sizes round differently in the
last bit), by worst-case fine-tuning:

- ``steps`` Adam steps (reference betas, fresh optimiser state), learning rate decayed from
  ``lr`` to ``lr_end`` on a cosine (Adam at a fixed 1e-3 has a noise floor: a
  run at that rate with ``--tol 5e-4`` met the cap without reaching the tolerance);
- each step's batch: ``batch`` fresh random sequences (the member's own data stream, continued)
  plus the witness pool, the loss the sum of the two MSEs;
- the witness pool: every ``refresh`` steps the ``witnesses`` worst inputs of the current head
  found by the certificate's own float search (``proofs.certify.head.witness.search``: typed inputs
  at every query, vertices of the content box, greedy sign flips) are added to it (the newest
  ``pool`` kept): the head is trained on the inputs where it is worst.

Pure and deterministic (numpy search, seeded torch generators, one thread): the same config and
seed give the same weights. ``worst_case_job`` is the sweep job (``sinks reproduce`` runs one
per seed, ``empirical.pipeline.parts.t1_end_to_end``); the result has a training summary's ``config`` /
``weights`` layout, so ``sinks certify`` reads it like one.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any

NAME = "worst-case"


@dataclass(frozen=True)
class WorstCaseConfig:
    """The setting: the reference single-layer softmax run (SPEC section 4) plus fine-tuning."""

    d: int = 16
    L: int = 16
    steps: int = 800
    lr: float = 1e-3
    lr_end: float = 1e-5
    batch: int = 128
    refresh: int = 20
    witnesses: int = 32
    pool: int = 256
    search_configs: int = 32  # configurations the witness search climbs (``witness.search``)
    reference_max_steps: int = 50_000
    eval_sequences: int = 1000
    eval_trigger: int = 7
    reference_lr: float | None = None  # None: the reference's 1e-3 (tests use tiny settings)

    def reference(self, seed: int):
        from empirical.training.train import TrainConfig

        return TrainConfig(kind="softmax", d=self.d, L=self.L, seeds=(seed,), max_steps=self.reference_max_steps,
                           eval_sequences=self.eval_sequences, eval_trigger=min(self.eval_trigger, self.L - 2),
                           lr=self.reference_lr, log_every=10_000)

    @classmethod
    def from_dict(cls, data: Any) -> "WorstCaseConfig":
        from constructions import files

        return files.config_from_dict(cls, data, "worst-case config")


def learning_rate(config: WorstCaseConfig, step: int) -> float:
    """Cosine decay from ``lr`` (step 0) to ``lr_end`` (the last step)."""
    return config.lr_end + (config.lr - config.lr_end) * 0.5 * (1 + math.cos(math.pi * step / max(config.steps, 1)))


def _witness_batch(model, config: WorstCaseConfig, step: int):
    """The current head's worst typed inputs as sequences x [W, L, d] (float32) and their
    trigger positions [W], with the float search's worst error and where it was."""
    import torch

    from empirical.training.model import to_network
    from proofs.certify.arithmetic import heads
    from proofs.certify.head import witness

    h = heads.head_maps(to_network(model))
    found = witness.search(h, config.L, seed=step, configs=config.search_configs)[:config.witnesses]
    rows = [t.sequence(config.L) for t in found]
    x = torch.tensor([[[float(v) for v in r] for r in X] for X, _ in rows], dtype=torch.float32)
    trig = torch.tensor([j for _, j in rows], dtype=torch.long)
    return x, trig, {"step": step, "float_worst": found[0].error, "case": found[0].case, "query": found[0].i}


def finetune(model, config: WorstCaseConfig, seed: int) -> list[dict[str, Any]]:
    """Worst-case fine-tuning of a single-member float32 model in place; the history of the
    float search's worst error at every refresh."""
    import torch

    from constructions import task
    from empirical.training.train import data_seed, optimizer

    cfg = task.TaskConfig(d=config.d, L=config.L)
    gen = torch.Generator().manual_seed(data_seed(seed) + 1)  # the member's stream, not its reference batches
    opt = optimizer(model, dataclasses.replace(config.reference(seed), lr=config.lr))
    pool_x = pool_t = None
    history = []
    for step in range(config.steps + 1):
        if step % config.refresh == 0 or step == config.steps:
            x, t, point = _witness_batch(model, config, step)
            point["lr"] = learning_rate(config, step)
            history.append(point)
            pool_x = x if pool_x is None else torch.cat([pool_x, x])[-config.pool:]
            pool_t = t if pool_t is None else torch.cat([pool_t, t])[-config.pool:]
        if step == config.steps:
            break
        for group in opt.param_groups:
            group["lr"] = learning_rate(config, step)
        b = task.sample(cfg, config.batch, gen)
        out, _ = model(torch.cat([b.x, pool_x]))
        y = torch.cat([b.y, task.target_torch(pool_x, pool_t)])
        err = out - y
        loss = err[:config.batch].pow(2).mean() + err[config.batch:].pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return history


def worst_case_job(config: WorstCaseConfig, seeds: tuple[int, ...], device: str = "cpu") -> dict[str, Any]:
    """The sweep job: for each seed, the reference run (``empirical.training.train.train``) and its
    worst-case fine-tuning. Returns a summary with ``config`` (seeds), ``weights`` and per member
    the reference run's figures and the fine-tuning history."""
    from constructions import files
    from empirical.host.device import use_training_threads
    from empirical.training.model import AttentionModel
    from empirical.training.train import train
    from empirical.training.stored_weights import model_weights

    use_training_threads()
    start = time.perf_counter()
    members, weights = [], []
    for seed in seeds:
        ref = train(config.reference(seed), device="cpu", quiet=True)
        model = AttentionModel("softmax", config.d, seeds=[seed])
        _load(model, ref["weights"][0])
        history = finetune(model, config, seed)
        m = ref["members"][0]
        members.append({"seed": seed, "reference_steps": m["steps"], "reference_converged": m["converged"],
                        "reference_eval_max_abs_error": m["eval_max_abs_error"], "reference_weights": ref["weights"][0],
                        "finetune_steps": config.steps,
                        "history": history, "final_float_worst": history[-1]["float_worst"]})
        weights += model_weights(model)
    out = {"setting": NAME, "config": {**dataclasses.asdict(config), "seeds": list(seeds)}, "members": members,
           "weights": weights, "seconds": time.perf_counter() - start,
           "provenance": files.provenance(config, list(seeds), device)}
    return files.to_jsonable(out)


def _load(model, member: dict) -> None:
    """A reference run's stored weights (one member) into a single-member model."""
    import torch

    with torch.no_grad():
        layer = model.layers[0]
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            getattr(layer, name).copy_(torch.tensor(member["layers"][0][name], dtype=torch.float32))


def merge(parts: list[dict], seeds: tuple[int, ...]) -> dict:
    """One summary from per-seed job results, in ``seeds`` order."""
    by_seed = {}
    for part in parts:
        for s, m, w in zip(part["config"]["seeds"], part["members"], part["weights"]):
            by_seed[s] = (m, w)
    first = parts[0]
    return {"setting": NAME, "config": {**first["config"], "seeds": list(seeds)},
            "members": [by_seed[s][0] for s in seeds], "weights": [by_seed[s][1] for s in seeds],
            "seconds": sum(p["seconds"] for p in parts), "provenance": first["provenance"]}
