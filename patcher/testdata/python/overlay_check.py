"""Check what Python imports through an overlay (vllm-timings apply --overlay).

    PYTHONPATH=OVERLAY:SITE python3 overlay_check.py OVERLAY [--drive SITE OUT]

imports every module the overlay's manifest lists and checks that each is
the overlay's patched copy, that the original file was never compiled nor
loaded from its bytecode (an audit hook watches compile and open from
before the first import), and that the rest of vllm still comes from the
installed tree. Prints "ok" and the modules served, or the failures and
exits 1.

With --drive, drive_serving.py first drives the serving code of SITE, as
imported through the overlay, into the file OUT, so that the checks cover
every file the serving code loaded.
"""

import importlib
import importlib.util
import json
import os
import sys

events = []


def audit(event, args):
    if event == "compile" and len(args) > 1 and isinstance(args[1], str):
        events.append(("compile", os.path.realpath(args[1])))
    elif event == "open" and args and isinstance(args[0], str):
        events.append(("open", os.path.realpath(args[0])))


sys.addaudithook(audit)

overlay = os.path.realpath(sys.argv[1])
with open(os.path.join(overlay, "vllm-timings-overlay.json")) as f:
    manifest = json.load(f)
copies = os.path.join(overlay, "vllm-timings-overlay") + os.sep
failures = []

if sys.argv[2:3] == ["--drive"]:
    spec = importlib.util.spec_from_file_location(
        "drive_serving", os.path.join(os.path.dirname(os.path.abspath(__file__)), "drive_serving.py"))
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)
    with open(sys.argv[4], "w") as out:
        driver.drive(sys.argv[3], False, out)

hook = sys.modules.get("sitecustomize")
if hook is None or os.path.realpath(hook.__file__) != os.path.join(overlay, "sitecustomize.py"):
    failures.append("sitecustomize is %r, not the overlay's" % (hook and hook.__file__))

originals = {os.path.realpath(e["original"]): e for e in manifest["files"]}
for e in manifest["files"]:
    try:
        mod = importlib.import_module(e["module"])
    except Exception as exc:  # noqa: BLE001 - reported
        failures.append("import %s: %r" % (e["module"], exc))
        continue
    where = os.path.realpath(mod.__file__)
    if not where.startswith(copies) or where != os.path.realpath(mod.__spec__.origin):
        failures.append("%s comes from %s, not from the overlay" % (e["module"], where))

for kind, path in events:
    if kind == "compile" and path in originals:
        failures.append("the original %s was compiled" % path)
    if kind == "open" and path.endswith(".pyc"):
        src = os.path.join(os.path.dirname(os.path.dirname(path)), os.path.basename(path).split(".")[0] + ".py")
        if src in originals:
            failures.append("the original's bytecode %s was read" % path)
for name, mod in list(sys.modules.items()):
    f = getattr(mod, "__file__", None)
    if f and os.path.realpath(f) in originals:
        failures.append("module %s is the original %s" % (name, f))

vllm = sys.modules["vllm"]
if not os.path.realpath(vllm.__file__).startswith(os.path.realpath(manifest["vllm_dir"]) + os.sep):
    failures.append("vllm itself comes from %s, not from %s" % (vllm.__file__, manifest["vllm_dir"]))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok")
for e in manifest["files"]:
    print("served", e["module"])
