"""Every weight loader turns every malformed file into one line and exit 2:
random bytes and truncations under each extension, containers that declare sizes they do not
hold, JSON nested too deeply or with NaN / huge numbers. No traceback, no output, and (in a
fresh process, measured) no allocation beyond what the file itself holds."""

from __future__ import annotations

import io
import json
import random
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from constructions import softmax_head
from constructions.errors import BadInput
from empirical.pipeline import cli
from empirical import weights
from empirical.training import stored_weights
from empirical.weights.network_files import network_arrays, write_network_json, write_network_npz

D = 5
EXTENSIONS = (".json", ".npz", ".safetensors", ".pt", ".pth")


def valid_files(folder: Path) -> dict[str, bytes]:
    """One valid file per format (the summary JSON too), as bytes."""
    import torch
    from safetensors.numpy import save_file

    from empirical.training.model import AttentionModel

    net = softmax_head.build(D, 3)
    out = {"net.json": write_network_json(folder / "v.json", net).read_bytes(),
           "net.npz": write_network_npz(folder / "v.npz", net).read_bytes()}
    save_file({k: v for k, v in network_arrays(net).items() if k.startswith("L")}, str(folder / "v.safetensors"))
    out["net.safetensors"] = (folder / "v.safetensors").read_bytes()
    layer, t = net.layers[0], lambda m: torch.tensor([[float(v) for v in row] for row in m])
    torch.save({f"{n}.weight": t(getattr(layer, n)[0]) for n in ("W_Q", "W_K", "W_V")} | {"W_O.weight": t(layer.W_O)},
               folder / "v.pt")
    out["net.pt"] = out["net.pth"] = (folder / "v.pt").read_bytes()
    model = AttentionModel("softmax", D, ensemble=2, seeds=[3, 4])
    out["summary.json"] = json.dumps({"config": {"seeds": [3, 4]}, "weights": stored_weights.model_weights(model)}).encode()
    return out


def _safetensors(header: dict, data: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def _zip(members: dict[str, bytes], method=zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _npy_claiming(shape: tuple[int, ...], data: bytes) -> bytes:
    """An .npy whose header declares ``shape`` (float64) over ``data``."""
    header = repr({"descr": "<f8", "fortran_order": False, "shape": shape}).encode()
    header += b" " * (127 - 10 - len(header)) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


def lying_files(folder: Path) -> dict[str, bytes]:
    """Files that declare more than they hold (what a reader must not allocate)."""
    import torch

    torch.save({"W_Q.weight": torch.zeros(1).expand(6000, 6000)}, folder / "expanded.pt")  # 288 MB as float64
    f64 = {"dtype": "F64", "data_offsets": [0, 8]}
    return {
        "huge_shape.safetensors": _safetensors({"L0.W_Q": {**f64, "shape": [10 ** 5, 10 ** 5, 16]}}, bytes(8)),
        "past_end.safetensors": _safetensors({"L0.W_Q": {"dtype": "F64", "shape": [1, 5, 5],
                                                         "data_offsets": [0, 10 ** 9]}}, bytes(200)),
        "header_length.safetensors": struct.pack("<Q", 2 ** 60) + b"{}",
        "lying_header.npz": _zip({"L0.W_Q.npy": _npy_claiming((10 ** 8,), bytes(64))}),  # 800 MB declared
        "lying_zip.npz": _zip({"L0.W_Q.npy": bytes(64)})[:-30],
        "expanded.pt": (folder / "expanded.pt").read_bytes(),
    }


def malformed_files(folder: Path) -> dict[str, bytes]:
    rng = random.Random(0)
    files: dict[str, bytes] = {}
    for ext in EXTENSIONS:
        for n, size in enumerate((0, 1, 7, 64, 600)):
            files[f"random{n}{ext}"] = bytes(rng.randrange(256) for _ in range(size))
    for name, data in valid_files(folder).items():
        for frac in (0.05, 0.3, 0.6, 0.9, 0.99):
            files[f"cut{int(frac * 100)}-{name}"] = data[:int(len(data) * frac)]
    valid = json.loads(valid_files(folder)["net.json"])
    files |= {
        "hello.pt": b"hello world\n",  # was KeyError: 101 from the torch reader
        "zip_magic.npz": b"PK\x03\x04garbage",  # was zipfile.BadZipFile
        "zip_magic.pt": b"PK\x03\x04garbage",
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
        "bigint.json": b'{"format": ' + b"9" * 5000 + b"}",
        "nan_weight.json": json.dumps(valid).replace('"1"', "NaN", 1).encode(),
        "exponent.json": json.dumps(valid).replace('"1"', '"1e99999999"', 1).encode(),
        "nan_summary.json": valid_files(folder)["summary.json"].replace(b"0.", b"NaN, 0.", 1),
        "ragged_summary.json": json.dumps({"config": {"seeds": [0]}, "weights": [
            {"kind": "softmax", "residual": False, "layers": [{"W_Q": [[1, 2], [3]], "W_K": 1, "W_V": "a",
                                                                "W_O": [[1]]}]}]}).encode(),
        "odd_summary.json": json.dumps({"config": 1, "weights": 2}).encode(),
        "bf16.safetensors": _safetensors({"L0.W_Q": {"dtype": "BF16", "shape": [1, 2, 2], "data_offsets": [0, 8]}},
                                         bytes(8)),
    }
    return files | lying_files(folder)


def test_every_malformed_file_is_one_line_and_exit_2(tmp_path, capsys):
    files = malformed_files(tmp_path)
    assert len(files) > 60
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        out_dir = tmp_path / f"out-{name}"
        code = cli.main(["certify", str(path), "--no-measure", "--out", str(out_dir)])  # a traceback fails here
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("sinks: error: "), (name, code, err)
        assert str(path) in lines[0] or "JSON" in lines[0], (name, err)
        assert not out_dir.exists() and not out, name


@pytest.mark.parametrize("name", ["net.json", "summary.json", "net.npz", "net.safetensors", "net.pt"])
def test_flipped_bytes_load_or_are_bad_input(tmp_path, name):
    """A changed byte may leave a valid file with other numbers; the loader either reads it or
    says what is wrong (BadInput), never anything else."""
    data = valid_files(tmp_path)[name]
    rng = random.Random(name)
    for n in range(25):
        flipped = bytearray(data)
        for _ in range(3):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        path = tmp_path / f"flip{n}-{name}"
        path.write_bytes(bytes(flipped))
        try:
            weights.load(path)
        except BadInput:
            pass


MEASURE = """
import resource, sys, tracemalloc
from pathlib import Path
from constructions.errors import BadInput
from empirical import weights
folder = Path(sys.argv[1])
weights.load(folder / "v.npz"); weights.load(folder / "v.safetensors"); weights.load(folder / "v.pt")  # imports
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
for name in sys.argv[2:]:
    try:
        weights.load(folder / name)
        print("LOADED", name)
    except BadInput:
        pass
    except Exception as e:  # reported after the allocation check
        print("CRASH", name, type(e).__name__)
print("PEAK", tracemalloc.get_traced_memory()[1], "RSS_GROWTH", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss)
"""


def test_declared_sizes_are_checked_before_anything_is_allocated(tmp_path):
    """In a fresh process: files declaring 0.8 GB arrays, a 1.3 TB safetensors tensor and a view of
    one float expanded to 6000 x 6000 are refused with the traced peak and the resident memory
    growing by less than 32 MB (each file is under 1 MB)."""
    valid_files(tmp_path)
    files = lying_files(tmp_path)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        assert len(data) < 2 ** 20
    run = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path), *files], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    words = run.stdout.split()
    peak, growth_kb = int(words[words.index("PEAK") + 1]), int(words[words.index("RSS_GROWTH") + 1])
    assert peak < 32 * 2 ** 20 and growth_kb < 32 * 2 ** 10, run.stdout
    assert "LOADED" not in words and "CRASH" not in words, run.stdout
