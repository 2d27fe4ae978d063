"""The machine a command runs on: its torch device and thread counts (``device``), what a piece of
work cost in wall and CPU time at what load (``usage``), the progress of long jobs across
worker processes (``progress``) and of a whole run through its stages (``watch``), and SIGTERM handled as Ctrl-C (``signals``). Imports no other room."""

PUBLIC = ("device", "usage", "progress", "watch", "signals")
