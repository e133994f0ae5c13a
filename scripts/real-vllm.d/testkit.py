"""What the Python drivers of real vLLM and of the fixture trees share.

Imported by level2.py, bench_instructions.py, bench_serving.py and
bench_observe.py (beside this file), and by the Go tests' drivers in
patcher/testdata/python (which put this directory on sys.path). Standard
library only: the drivers run under the system python3 as well as under a
vLLM virtualenv.
"""

import importlib.util
import sys


def load(name, path):
    """Import the Python file at path as the module name (registered in
    sys.modules, so that its own imports of name find it): how the benches
    load a patched or unpatched copy of one vLLM file beside the imported
    vLLM."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class FakeMonotonic:
    """Stands for the time module of the patched vllm/_llamacpp_timings.py
    (assign it to the module's `time`): monotonic() reads now, which a
    driver sets to the engine's own times. A request without stats
    (--disable-log-stats) gets a RequestClock from the patched output
    processor, and on this clock it reads exactly what the stats would
    have."""

    now = 0.0

    def monotonic(self):
        return self.now
