import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
# The reference formulation of the layer's products (empirical.training.formulations): no start-up
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


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """The suite's host caches (the formulation choice, the compiled kernels) in a folder of the
    session's, not the user's ~/.cache (tests that test the cache point it elsewhere again)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SINKS_CACHE_DIR", str(tmp_path_factory.mktemp("sinks-cache")))
        yield
