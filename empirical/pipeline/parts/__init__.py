"""The parts of ``sinks reproduce``, one module each (see ``empirical.pipeline.reproduce``).

A part ``empirical/pipeline/parts/<name>.py`` defines ``run(results_dir: Path, quick: bool, device: str)
-> dict`` returning ``{"claims": [...], "tables": [...], ...}``.
"""
