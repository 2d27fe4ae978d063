"""One module per ``sinks`` subcommand (see ``empirical.cli``)."""
