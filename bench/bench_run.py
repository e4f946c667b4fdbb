"""bench/run as an importable module, for the benchmarks built on its driver (bench/roles,
bench/relocations): the script has no .py suffix, so Python cannot import it by name.
Python 3.11 stdlib only."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path


def load():
    """bench/run, loaded once per process, for its Session, cold_start and helpers."""
    path = Path(__file__).resolve().parent / "run"
    loader = importlib.machinery.SourceFileLoader("care_bench_run", str(path))
    spec = importlib.util.spec_from_loader("care_bench_run", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
