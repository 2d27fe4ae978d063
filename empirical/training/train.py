"""Training on the task of constructions/SPEC.md section 1 with the reference optimiser and stop rule (section 4).

``train(TrainConfig(...)) -> summary`` trains every seed of ``config.seeds`` together in ONE
ensemble model (a leading seed dimension on every parameter, ``empirical.training.model``):

- member s has its own initialisation (``AttentionModel`` seeds it with s) and its own data
  generator (seeded with ``data_seed(s)``), so its run does not depend on the other members;
- the loss is the sum over members of each member's MSE, so each member's gradient is its own
  and Adam (elementwise) updates each member as if it trained alone;
- the stop rule is checked for each member at every step: the first batch whose max-abs error
  is below ``tol`` stops that member at that step. A stopped member never moves again: it leaves
  the computation (``empirical.training.ensemble``: its weights are kept, the others train on), so later
  steps cost only the members still training. Checking it costs one read-back of an [S]
  tensor per step, nothing more.

The summary (JSON-able) holds per member: steps to stop (or the cap, flagged not converged),
the final batch error, the evaluation on ``eval_sequences`` sequences with the trigger at
``eval_trigger`` (errors, the per-head sink metrics of ``empirical.training.metrics``, the certified
bound of ``empirical.training.bound`` where it applies), mean and std attention patterns for the figures,
a history of loss / error / sink mass / bound every ``log_every`` steps, timing and provenance.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import time
from dataclasses import dataclass
from typing import Any

from constructions import attention, files, task
from constructions.errors import BadInput
from empirical.training.ensemble import Ensemble

DATA_SEED_OFFSET = 1 << 40  # member s draws data from seed 2^40 + s: never an init seed
EVAL_SEED = 20260329  # one fixed evaluation set for every run and member
HISTORY_SEQUENCES = 128  # sequences of the small evaluation set used at each history point
HISTORY_SOLVER_ITERS = 50  # bound solver steps at history points (still certified, less tight)
HISTORY_BOUND_SEQUENCES = 32  # the history's bound uses the first 32 of those sequences
# With several heads (or layers) a head's certified bound is mostly vacuous (its own output need
# not be small, ``empirical.training.bound``), so by default it is reported on the first 200 evaluation
# sequences, not all 1000: on all of them its QPs took 3.2x the CPU time of the 1500 training steps
# of a 2 x 2 run (empirical/training/README.md, "Cost").
STACK_BOUND_SEQUENCES = 200


def data_seed(seed: int) -> int:
    return DATA_SEED_OFFSET + seed


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@dataclass(frozen=True)
class TrainConfig:
    """One training setting; ``residual`` and ``lr`` default to constructions/SPEC.md section 4's choice
    (residual stream and lr 1e-4 for several layers; no residual and lr 1e-3 for one)."""

    kind: str = "softmax"
    d: int = 16
    L: int = 16
    content: str = "uniform"
    layers: int = 1
    heads: int = 1
    residual: bool | None = None  # None: derived, residual exactly when layers > 1
    lr: float | None = None  # None: 1e-3 for one layer, 1e-4 for several
    betas: tuple[float, float] = (0.9, 0.95)
    batch: int = 128
    tol: float = 5e-3
    max_steps: int = 50_000
    seeds: tuple[int, ...] = (0,)
    eval_sequences: int = 1000
    eval_trigger: int = 7
    bound_sequences: int | None = None  # None: every evaluation sequence (one head), else the first 200
    log_every: int = 100

    def __post_init__(self) -> None:
        attention.get(self.kind)  # BadInput naming the valid kinds
        if self.bound_sequences is None:
            several = _is_int(self.layers) and _is_int(self.heads) and self.layers * self.heads > 1
            default = min(STACK_BOUND_SEQUENCES, self.eval_sequences) if several else self.eval_sequences
            object.__setattr__(self, "bound_sequences", default)
        for name in ("layers", "heads", "batch", "max_steps", "eval_sequences", "bound_sequences", "log_every"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise BadInput(f"training field {name!r} must be a positive integer, got {value!r}")
        if self.residual is None:
            object.__setattr__(self, "residual", self.layers > 1)
        if self.lr is None:
            object.__setattr__(self, "lr", 1e-3 if self.layers == 1 else 1e-4)
        if not isinstance(self.lr, (int, float)) or isinstance(self.lr, bool) or not self.lr > 0:
            raise BadInput(f"training field 'lr' must be a positive number, got {self.lr!r}")
        betas = tuple(self.betas) if isinstance(self.betas, (list, tuple)) else None
        if betas is None or len(betas) != 2 or not all(isinstance(b, (int, float)) and 0 <= b < 1 for b in betas):
            raise BadInput(f"training field 'betas' must be two numbers in [0, 1), got {self.betas!r}")
        object.__setattr__(self, "betas", tuple(float(b) for b in betas))
        if not isinstance(self.tol, (int, float)) or isinstance(self.tol, bool) or not self.tol > 0:
            raise BadInput(f"training field 'tol' must be a positive number, got {self.tol!r}")
        seeds = tuple(self.seeds) if isinstance(self.seeds, (list, tuple)) else None
        if not seeds or not all(_is_int(s) and s >= 0 for s in seeds):
            raise BadInput(f"training field 'seeds' must be a non-empty list of integers >= 0, got {self.seeds!r}")
        if len(set(seeds)) != len(seeds):
            raise BadInput(f"training field 'seeds' has repeated seeds: {list(seeds)}")
        object.__setattr__(self, "seeds", seeds)
        self.task()  # BadInput for d, L, content
        if not _is_int(self.eval_trigger) or not 2 <= self.eval_trigger <= self.L - 1:
            raise BadInput(f"training field 'eval_trigger' must be an integer in 2..{self.L - 1}, got {self.eval_trigger!r}")

    def task(self, trigger: int | None = None) -> task.TaskConfig:
        """The task this config trains on (random trigger) or evaluates on (fixed trigger)."""
        return task.TaskConfig(d=self.d, L=self.L, trigger=trigger, residual=self.residual, content=self.content)

    @property
    def bound_applies(self) -> bool:
        return attention.get(self.kind).normalised

    @classmethod
    def from_dict(cls, data: Any) -> "TrainConfig":
        return files.config_from_dict(cls, data, "training config")


# ----------------------------------------------------------------------------------------


class _Progress:
    """tqdm bar on a terminal, nothing otherwise (or when quiet)."""

    def __init__(self, total: int, quiet: bool, label: str):
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=label, unit="step", leave=False, mininterval=0.5)

    def show(self, step: int, active: int, max_err: list[float]) -> None:
        if self.bar is not None:
            self.bar.update(step - self.bar.n)
            self.bar.set_postfix(active=active, max_err=f"{max(max_err, default=0):.2e}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _sample(cfg: task.TaskConfig, batch: int, generators: list, device: str):
    """One fresh batch per member (member m's from its own generator): x, y [S, B, L, d]."""
    b = task.sample_members(cfg, batch, generators, device)
    return b.x, b.y


def train(config: TrainConfig, device: str = "cpu", quiet: bool = False) -> dict[str, Any]:
    """Train every seed of ``config`` together; return the JSON-able summary."""
    import torch

    from empirical.host import progress as job_progress
    from empirical.host import usage
    from empirical.training import formulations
    from empirical.training.model import AttentionModel

    meter, split = usage.Meter(sample=True), usage.Split()
    with split.phase("formulation"):  # measured once per host, then cached (empirical.training.fastest)
        from empirical.training.fastest import choose_for_host

        formulation, chosen_by = choose_for_host(device)
    S = len(config.seeds)
    model = AttentionModel(config.kind, config.d, layers=config.layers, heads=config.heads,
                           residual=config.residual, ensemble=S, seeds=config.seeds, device=device)
    ens = Ensemble(model, config, optimizer)
    train_task = config.task()
    generators = [torch.Generator().manual_seed(data_seed(s)) for s in config.seeds]
    history_set = _eval_batch(config, HISTORY_SEQUENCES, device)
    shadow = _Float64Shadow(model)

    stop_step: list[int | None] = [None] * S
    final_batch_err = [float("nan")] * S
    last = {"loss": [float("nan")] * S, "batch_max_abs_error": [float("nan")] * S}  # per member, host
    history: list[dict[str, Any]] = []
    progress = _Progress(config.max_steps, quiet, f"{config.kind} {config.layers}x{config.heads}")
    start, start_cpu = time.perf_counter(), time.process_time()
    steps_run, logging_seconds = 0, 0.0
    for step in range(config.max_steps + 1):
        x, y = _sample(train_task, config.batch, [generators[m] for m in ens.live], device)
        mse, max_err = batch_errors(ens.model, x, y)
        host_err = max_err.tolist()  # the one host read-back per step (the stop rule)
        newly = [m for m, e in zip(ens.live, host_err) if e < config.tol]
        logged = step % config.log_every == 0 or newly or step == config.max_steps
        if logged:
            for m, loss, e in zip(ens.live, mse.detach().tolist(), host_err):
                last["loss"][m], last["batch_max_abs_error"][m] = loss, e
        if newly or step == config.max_steps:
            for m, e in zip(ens.live, host_err):
                final_batch_err[m] = e
            for m in newly:
                stop_step[m] = step
        if logged:
            tick = time.perf_counter()
            with split.phase("history"):
                ens.write_back()
                history.append(_history_point(shadow.sync(), config, history_set, step, last))
            logging_seconds += time.perf_counter() - tick
        if newly:
            ens.drop(newly)  # a stopped member never moves again: it leaves the computation
        if step == config.max_steps or not ens.live:
            break
        update(ens.opt, mse)
        steps_run += 1
        if step % 50 == 0:
            progress.show(step, len(ens.live), host_err)
            elapsed = time.perf_counter() - start - logging_seconds
            job_progress.report(step=step, members=S, active=len(ens.live),
                                steps_per_second=steps_run / elapsed if elapsed > 0 else 0.0)
    ens.write_back()
    progress.close()
    seconds = time.perf_counter() - start - logging_seconds  # training only
    cpu_seconds = time.process_time() - start_cpu - split.read().get("history", {"cpu_s": 0.0})["cpu_s"]

    with split.phase("evaluation"):
        summary = _evaluate(model, config, device, split)
    for s, member in enumerate(summary["members"]):
        member.update({
            "seed": config.seeds[s],
            "converged": stop_step[s] is not None,
            "steps": stop_step[s] if stop_step[s] is not None else config.max_steps,
            "final_batch_max_abs_error": final_batch_err[s],
        })
    summary["history"] = history
    summary["config"] = dataclasses.asdict(config)
    with split.phase("weights"):
        _store_weights(summary, model)
    summary["timing"] = {"seconds": seconds, "history_seconds": logging_seconds, "ensemble_steps": steps_run,
                         "steps_per_second": steps_run / seconds if seconds > 0 else None,
                         "threads": torch.get_num_threads(),
                         "split": {"training": {"wall_s": round(seconds, 3), "cpu_s": round(cpu_seconds, 3)},
                                   **split.read()},
                         "total": meter.read(), "machine": usage.machine(),
                         "formulation": {"name": formulation, "chosen_by": chosen_by,
                                         **formulations.record(formulation)}}
    summary["provenance"] = {**files.provenance(config, list(config.seeds), device), "formulation": formulation}
    return files.to_jsonable(summary)


def _store_weights(summary: dict, model) -> None:
    """The final weights per member (``sinks certify`` reads them; ``empirical.weights.formats``)."""
    from empirical.training.stored_weights import model_weights

    summary["weights"] = model_weights(model)


def batch_errors(model, x, y):
    """Each member's MSE [S] (with its graph) and max-abs error [S] on its batch x, y [S, B, L, d]."""
    out, _ = model(x)
    err = out - y
    return err.pow(2).mean(dim=(1, 2, 3)), err.detach().abs().amax(dim=(1, 2, 3))


def update(opt, mse) -> None:
    """One Adam step on the members' summed MSE (each member's gradient is its own term's)."""
    opt.zero_grad(set_to_none=True)
    mse.sum().backward()
    opt.step()


def optimizer(model, config: TrainConfig):
    """Adam with the reference betas. The fused kernel (one pass per parameter, the same
    elementwise update) where this torch has it for the device, else the plain loop."""
    import torch

    kwargs = dict(lr=config.lr, betas=config.betas)
    try:
        return torch.optim.Adam(model.parameters(), fused=True, **kwargs)
    except (RuntimeError, TypeError):  # pragma: no cover - torch builds without a fused Adam here
        return torch.optim.Adam(model.parameters(), **kwargs)


def _eval_batch(config: TrainConfig, n: int, device: str = "cpu"):
    """The fixed evaluation sequences (drawn on the CPU, so every device sees the same ones)."""
    import torch

    cfg = config.task(trigger=config.eval_trigger)
    return task.sample(cfg, n, torch.Generator().manual_seed(EVAL_SEED), device=device, dtype=torch.float64)


def _float64(model):
    import torch

    return copy.deepcopy(model).to(torch.float64)


class _Float64Shadow:
    """A float64 twin of the trained model, built once; ``sync()`` copies the current weights
    into it (no deep copy of the module per history point)."""

    def __init__(self, model):
        self.model = model
        self.twin = _float64(model)

    def sync(self):
        import torch

        with torch.no_grad():
            for mine, theirs in zip(self.twin.parameters(), self.model.parameters()):
                mine.copy_(theirs)
        return self.twin


def _history_point(m64, config: TrainConfig, batch, step: int, last: dict[str, list]) -> dict[str, Any]:
    """Loss, batch error, sink mass per head and (single layer) the certified bound now
    (``m64``: the float64 twin holding every member's current weights; ``last``: each member's
    loss and batch max-abs error, for a stopped member those of the batch that stopped it)."""
    import torch

    from empirical.training import bound, metrics

    with torch.no_grad():
        _, cache = m64(batch.x)
        point = {"step": step, "loss": list(last["loss"]), "batch_max_abs_error": list(last["batch_max_abs_error"]),
                 "bos_nontrigger_mean": [
                     metrics.bos_mass(cache[f"L{n}.pattern"], batch.trigger)["nontrigger_mean"].tolist()
                     for n in range(config.layers)]}  # [layer][S][H]
        if config.bound_applies and config.layers == 1 and config.heads == 1:
            n = HISTORY_BOUND_SEQUENCES
            summary = bound.model_bounds(m64, batch.x[:n], batch.trigger[:n], HISTORY_SOLVER_ITERS)[0][0]
            point["bound_mean"] = summary["bound_mean"].tolist()  # [S]
            point["bound_min"] = summary["bound_min"].tolist()
    return point


def _evaluate(model, config: TrainConfig, device: str, split=None) -> dict[str, Any]:
    """Errors, per-head sink metrics, certified bounds and mean / std patterns on the
    evaluation set, in float64, one member at a time (bounded memory). ``split``
    (``empirical.host.usage.Split``) times the bound's QPs as the phase "bound"."""
    import torch

    from empirical.host import usage
    from empirical.training import bound, metrics

    split = split or usage.Split()

    batch = _eval_batch(config, config.eval_sequences, device)
    m64 = _float64(model)
    members, mean_patterns, std_patterns = [], [], []
    with torch.no_grad():
        out, cache = m64(batch.x)  # [S, B, L, d]
        err = out - batch.y
        heads = [metrics.head_report(cache[f"L{n}.pattern"], batch.trigger) for n in range(config.layers)]
        n_bound = min(config.bound_sequences, config.eval_sequences)
        with split.phase("bound"):
            bounds = (bound.model_bounds(m64, batch.x[:n_bound], batch.trigger[:n_bound])
                      if config.bound_applies else None)
        for s in range(len(config.seeds)):
            layers = []
            for n in range(config.layers):
                layer = []
                for h in range(config.heads):
                    entry = {k: v[s, h].item() for k, v in heads[n].items()}
                    if bounds is not None:
                        entry["bound"] = {k: v[s].item() for k, v in bounds[n][h].items()}
                    layer.append(entry)
                layers.append(layer)
            sinking = [e["sinks_gu"] for layer in layers for e in layer]
            members.append({
                "eval_mse": err[s].pow(2).mean().item(),
                "eval_max_abs_error": err[s].abs().max().item(),
                "eval_max_abs_error_nontrigger": _nontrigger_error(err[s], batch.trigger),
                "sinking_fraction_gu": sum(sinking) / len(sinking),
                "layers": layers,
            })
        for n in range(config.layers):
            p = cache[f"L{n}.pattern"]  # [S, B, H, L, L]
            mean_patterns.append(p.mean(dim=1))
            std_patterns.append(p.std(dim=1))
    mean = torch.stack(mean_patterns, dim=1)  # [S, layers, H, L, L]
    std = torch.stack(std_patterns, dim=1)
    return {
        "members": members,
        "eval": {"sequences": config.eval_sequences, "trigger": config.eval_trigger, "seed": EVAL_SEED},
        "patterns": {"mean": _rounded(mean), "std": _rounded(std)},
    }


def _nontrigger_error(err, trigger) -> float:
    """Max-abs error over non-trigger queries 1..L-1 (what the T1 bound's ||o_i|| sees)."""
    from empirical.training import metrics

    mask = metrics.query_masks(trigger, err.shape[-2])["nontrigger"]  # [B, L]
    return err.abs().amax(dim=-1)[mask].max().item()


def _rounded(t) -> list:
    """Patterns for figures, rounded to 1e-7 to keep the JSON small (metrics use full precision)."""
    import torch

    return torch.round(t, decimals=7).tolist()


def train_job(config: TrainConfig, seeds: tuple[int, ...], device: str) -> dict[str, Any]:
    """The sweep job (``empirical.pipeline.sweep.Job("empirical.train:train_job", config, seeds)``):
    train ``config`` on ``seeds`` quietly. Pure: the same job gives the same numbers.

    Runs on one torch thread whatever the pool gave it: a sweep with one job left hands it all the
    cores, and two threads made these tiny models several times slower on a loaded machine
    (``empirical.host.device.use_training_threads``)."""
    from empirical.host.device import use_training_threads

    use_training_threads()
    return train(dataclasses.replace(config, seeds=tuple(seeds)), device=device, quiet=True)
