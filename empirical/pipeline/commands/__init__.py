"""One module per ``sinks`` subcommand (see ``empirical.pipeline.cli``)."""
