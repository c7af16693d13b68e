"""sitecustomize for run.py's launcher processes: the one fix Debian's torch 1.13 needs on
Python 3.11, applied before `python3 -m torch.distributed.run|launch` starts, so the
launcher runs unchanged and its output (tracebacks included) is what a working install
prints.

Why: Std.from_str (torch/distributed/elastic/multiprocessing/api.py) maps "0".."3" to a
Std by iterating the IntFlag (`for s in Std`). Since Python 3.11 iterating a Flag yields
only its canonical single-bit members, OUT (1) and ERR (2): "0" (NONE) and "3" (ALL) fall
through and return None. The launcher's defaults are --redirects 0 and --tee 0, so
start_processes() calls to_map(None, n) and every torchrun / torch.distributed.launch
dies with AttributeError: 'NoneType' object has no attribute 'get' (--tee 3 and
--redirects 3 hit it too). The fix parses with Std(int(v)). run.py puts this folder on
PYTHONPATH for the launcher only (the patch is applied only when the interpreter was
started for one of the two launcher modules); mode version-mismatch runs without it.
Debian's own sitecustomize (/usr/lib/python3.X/sitecustomize.py) is run afterwards.
"""
import importlib.util
import os
import sys


def _patch():
    import re

    from torch.distributed.elastic.multiprocessing import api

    def from_str(vm):
        if re.match(api._VALUE_REGEX, vm):
            return api.Std(int(vm))
        if re.match(api._MAPPING_REGEX, vm):
            return {int(i): api.Std(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
        raise ValueError(f"{vm} does not match: <{api._VALUE_REGEX}> or <{api._MAPPING_REGEX}>")

    api.Std.from_str = staticmethod(from_str)


if any(a in ("torch.distributed.run", "torch.distributed.launch") for a in getattr(sys, "orig_argv", ())):
    _patch()

_debian = os.path.join(sys.prefix, "lib", "python%d.%d" % sys.version_info[:2], "sitecustomize.py")
if os.path.exists(_debian):
    _spec = importlib.util.spec_from_file_location("_debian_sitecustomize", _debian)
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
