"""A layer's per-sequence products compiled for the host: ``attend.cpp`` (the kernel),
``build`` (compile once per host and shape, load with ctypes), ``layer`` (the autograd function
around it). ``empirical.training.formulations`` offers it as the ``compiled`` formulation."""
