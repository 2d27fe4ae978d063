import os

os.environ.setdefault("MPLBACKEND", "Agg")
# The reference formulation of the layer's products (empirical.formulations): no start-up
# measurement in the suite; tests/test_formulations.py runs every formulation and the choice.
os.environ.setdefault("SINKS_FORMULATION", "bmm")


def pytest_configure(config):
    try:
        import torch
    except ImportError:  # pragma: no cover
        return
    # Tiny models are overhead-bound: one intra-op thread is fastest for them (measured on the
    # shared 2-core machine: a small training test took 2.9 s on 1 thread, 12.2 s on 2).
    torch.set_num_threads(1)
