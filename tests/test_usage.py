"""empirical.host.usage: wall and CPU time, load samples, the per-phase split, and report lines."""

import gc
import threading
import time

from empirical.host import usage


def _busy(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_meter_gives_wall_cpu_and_load_and_samples_the_load(monkeypatch):
    monkeypatch.setattr(usage, "LOAD_EVERY_S", 0.02)
    meter = usage.Meter(sample=True)
    _busy(0.2)
    time.sleep(0.1)
    got = meter.read()
    assert got["cpu_self_s"] >= 0.2 and got["wall_s"] >= got["cpu_self_s"] + 0.09
    assert got["cpu_s"] == round(got["cpu_self_s"] + got["cpu_children_s"], 3)
    assert got["load_samples"] >= 4  # start, end and samples between
    assert "s wall" in usage.describe(got) and "s CPU, load" in usage.describe(got)


def test_a_dropped_meter_stops_its_sampling_thread(monkeypatch):
    monkeypatch.setattr(usage, "LOAD_EVERY_S", 0.01)
    before = {t.ident for t in threading.enumerate() if t.name == "load-sampler"}
    meter = usage.Meter(sample=True)
    thread = next(t for t in threading.enumerate() if t.name == "load-sampler" and t.ident not in before)
    del meter  # a run that raised never reads its meter
    gc.collect()
    thread.join(timeout=2)
    assert not thread.is_alive()


def test_split_accumulates_wall_and_cpu_per_phase():
    split = usage.Split()
    for _ in range(2):
        with split.phase("work"):
            _busy(0.05)
    with split.phase("wait"):
        time.sleep(0.05)
    got = split.read()
    assert got["work"]["cpu_s"] >= 0.1 and got["wait"]["cpu_s"] < 0.04 <= got["wait"]["wall_s"]
    table = usage.phases_table(got, "t")
    assert [row[0] for row in table["rows"]] == ["work", "wait"]


def test_jobs_table_says_not_recorded_for_old_records():
    old = {"wall_s": 3.0, "result": {"timing": {"ensemble_steps": 10}}}
    new = {"wall_s": 3.0, "usage": {"wall_s": 3.0, "cpu_s": 2.5, "load_mean": 1.5, "load_start": 1.0, "load_end": 2.0},
           "result": {"timing": {"ensemble_steps": 10, "split": {"training": {"wall_s": 2.0, "cpu_s": 1.9},
                                                                  "evaluation": {"wall_s": 0.5, "cpu_s": 0.4},
                                                                  "bound": {"wall_s": 0.3, "cpu_s": 0.3}}}}}
    rows = usage.jobs_table([("old", old), ("new", new)], "t")["rows"]
    assert rows[0][2] == "not recorded" and rows[0][5] == "3.0 / not recorded"
    assert rows[1][2:] == ["2.0 / 1.9", "0.5 / 0.4", "0.3", "3.0 / 2.5", "1.5 (1.0 → 2.0)"]


def test_the_vector_width_is_the_widest_flag_the_cpu_names():
    from constructions import native

    assert native.vector_width({"sse2", "avx", "avx2", "avx512f"}) == "AVX-512 (512 bit)"
    assert native.vector_width({"sse2", "avx", "avx2"}) == "AVX2 (256 bit)"
    assert native.widest_vector({"fpu", "sse2"}) == ("SSE2", 128)
    assert native.vector_width({"fpu"}) == "unknown"


def test_the_machine_record_names_its_vector_width_and_what_the_process_was_told(monkeypatch):
    import torch  # noqa: F401  (the capability is read only from an imported torch)

    monkeypatch.setenv("SINKS_KERNEL_FLAGS", "-mno-avx512f")
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX2")
    host = usage.machine()
    assert host["vector"]["kernel_flags"] == "-mno-avx512f" and host["vector"]["mkl_instructions"] == "AVX2"
    assert host["vector"]["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    line = usage.describe_machine(host)
    assert host["cpu"] in line and "kernel flags: -mno-avx512f" in line and "MKL: AVX2" in line
    name = host["vector"]["cpu_vector"]
    assert (name in line) if name != "unknown" else ("vector width unknown" in line)
