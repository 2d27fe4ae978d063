import os

os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_configure(config):
    try:
        import torch
    except ImportError:  # pragma: no cover
        return
    # Tiny models are overhead-bound: use the cores this process really owns.
    torch.set_num_threads(max(1, min(2, len(os.sched_getaffinity(0)))))
