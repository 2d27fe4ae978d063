"""Weight files in and out: every format ``sinks certify`` reads (``formats``, over the checked
containers of ``readers``), the project's own exact files of a network (``network_files``), and
the bridge to TransformerLens (``lens``, optional extra ``.[lens]``). Imports ``empirical.training``.

The public surface is the names re-exported here, and ``lens`` by name. Nothing here loads torch
on import.
"""

from .formats import Loaded, load, networks_from_summary
from .network_files import (load_model, load_network, network_arrays, network_from_json, network_to_json,
                            write_network_json, write_network_npz)

PUBLIC = ("lens",)
__all__ = ["Loaded", "load", "networks_from_summary", "load_model", "load_network", "network_arrays",
           "network_from_json", "network_to_json", "write_network_json", "write_network_npz"]
