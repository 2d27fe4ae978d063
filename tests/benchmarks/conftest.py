"""Benchmarks that derive figures (rates, ratios) add a line to ``FIGURES``; they are printed at
the end of ``pytest tests/benchmarks --benchmark-enable --benchmark-only`` so that one run reports them all."""

FIGURES: list[str] = []


def pytest_terminal_summary(terminalreporter):
    if FIGURES:
        terminalreporter.section("derived figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
