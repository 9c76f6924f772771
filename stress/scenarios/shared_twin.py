# The "shared" stress scenario's twin in pure PyGObject, run by python3
# beside it in the same harness run (the harness compares the two RSS
# slopes): the same windows, boxes, labels and LineChart (duet's own
# Python widget, from the file given), four every 2 ms, every 100th
# presented, each destroyed, both collectors' Python half forced at the
# same pace. It prints the harness's sample lines (JSON) on stdout each
# 250 ms, and a final one when stdin closes.
#
#   python3 shared_twin.py WIDGETS_PY GC_INTERVAL_SECONDS
import gc
import json
import os
import sys
import threading
import time

import gi

gi.require_version("Gtk", "4.0")
from gi.repository import GLib, Gtk  # noqa: E402

widgets_py, gc_every = sys.argv[1], float(sys.argv[2])
ns = {"__name__": "duet_widgets_twin"}
with open(widgets_py) as f:
    exec(compile(f.read(), widgets_py, "exec"), ns)
LineChart = ns["LineChart"]

start = time.monotonic()
state = {"iter": 0, "gc": 0, "stop": False}
page = os.sysconf("SC_PAGE_SIZE")


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page


def sample(final=False):
    s = {"t": time.monotonic() - start, "iter": state["iter"], "py_gc": state["gc"], "forced_gc": state["gc"], "rss": rss()}
    if final:
        s["final"] = True
    print(json.dumps(s), flush=True)


def step():
    state["iter"] += 1
    n = state["iter"]
    win = Gtk.Window()
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=2)
    box.append(Gtk.Label(label="gotk4 label"))
    box.append(Gtk.Label(label="PyGObject label"))
    box.append(LineChart(title="x"))
    box.get_first_child()
    win.set_child(box)
    if n % 100 == 1:
        win.present()
    win.destroy()


def tick():
    if state["stop"]:
        return False
    for _ in range(4):
        step()
    return True


def collect():
    if state["stop"]:
        return False
    gc.collect()
    state["gc"] += 1
    return True


def report():
    if state["stop"]:
        return False
    sample()
    return True


def watch_stdin(loop):
    sys.stdin.read()  # the harness closes it: stop, settle, report
    state["stop"] = True
    GLib.idle_add(loop.quit)


gc.disable()  # as in duet's loop: collections at the forced pace only
warm = Gtk.Window(title="warm-up")
warm.present()
ctx = GLib.MainContext.default()
deadline = time.monotonic() + 2
while time.monotonic() < deadline:
    ctx.iteration(False)
    time.sleep(0.001)
warm.destroy()
loop = GLib.MainLoop()
GLib.timeout_add(2, tick)
GLib.timeout_add(max(1, int(gc_every * 1000)), collect)
GLib.timeout_add(250, report)
threading.Thread(target=watch_stdin, args=(loop,), daemon=True).start()
loop.run()
for _ in range(3):
    gc.collect()
    while ctx.iteration(False):
        pass
sample(final=True)
