"""Read-recording views of JSON data: what the table builders read is what gets committed.

``track(data)`` returns ``(view, mirror)``: ``view`` behaves like the JSON tree ``data`` (mappings,
sequences, plain values) and ``mirror`` fills, as the view is read, with exactly the parts read:
every key looked up or iterated, every list touched (its length kept, entries not read left as
None), every leaf value read. The builders are deterministic functions of what they read, so
running them again on the mirror reads the same paths and renders the same tables; that makes
the mirror a small, complete input for re-rendering (``empirical.pipeline.published``).

Only what a builder needs from JSON is supported: ``[]`` / ``get`` / ``in`` / iteration /
``len`` / ``items`` on mappings, indexing (negative too), slicing, iteration and ``len`` on
lists. Anything else on a view (``json.dumps``, ``==`` against a dict) is not recorded and must
not be used in a builder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def track(data: Any) -> tuple[Any, Any]:
    mirror: dict | list = [None] * len(data) if isinstance(data, list) else {}
    return _view(data, mirror), mirror


def _view(value: Any, mirror: Any) -> Any:
    if isinstance(value, dict):
        return TrackedMapping(value, mirror)
    if isinstance(value, list):
        return TrackedList(value, mirror)
    return value


def _child(value: Any, existing: Any) -> Any:
    """The mirror node for ``value``: the one already there if it has the right type."""
    if isinstance(value, dict):
        return existing if isinstance(existing, dict) else {}
    if isinstance(value, list):
        return existing if isinstance(existing, list) else [None] * len(value)
    return value


class TrackedMapping(Mapping):
    def __init__(self, data: dict, mirror: dict):
        self._data, self._mirror = data, mirror

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]  # a missing key raises KeyError and records nothing
        self._mirror[key] = _child(value, self._mirror.get(key))
        return _view(value, self._mirror[key])

    def __iter__(self):
        for key in self._data:
            self._mirror.setdefault(key, None)  # the key exists; its value only if read
            yield key

    def __len__(self) -> int:
        for key in self._data:
            self._mirror.setdefault(key, None)
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        if key in self._data:
            self._mirror.setdefault(key, None)
            return True
        return False


class TrackedList(Sequence):
    def __init__(self, data: list, mirror: list):
        self._data, self._mirror = data, mirror

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._data)))]
        i = index + len(self._data) if index < 0 else index
        value = self._data[i]  # IndexError ends iteration
        self._mirror[i] = _child(value, self._mirror[i])
        return _view(value, self._mirror[i])
