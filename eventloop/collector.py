# duet_gc: Python's cycle collector on the UI thread while the loop runs
# (see "The cycle collector on the UI thread" in python.go).
import gc, sys, threading

class OffThreadCollection(RuntimeWarning):
    """Python's cycle collector ran on a thread other than the UI thread
    while the loop ran: GTK objects freed by it are finalised off GTK's
    thread."""

_real_enable, _real_disable, _real_isenabled = gc.enable, gc.disable, gc.isenabled
# The loop's own collections call the collector itself, as the interpreter
# started with it (pygi's _duet keeps it): code that replaces gc.collect (a
# stub, say) would otherwise leave a due collection due, and the loop
# collecting again on every turn.
_real_collect = sys.modules["_duet"].gc_collect
_state = {"active": False, "wanted": True, "ui": None, "seen": set(), "report": None, "tell": None}

def _off_ui(what):
    t = threading.current_thread()
    key = (threading.get_ident(), what)
    if key in _state["seen"]:
        return
    _state["seen"].add(key)
    exc = OffThreadCollection(
        "%s on thread %r (not the UI thread) while the duet loop runs: GTK objects it frees are "
        "finalised off GTK's thread; run collections on the loop (eventloop.Collect, eventloop.Invoke)"
        % (what, t.name))
    report = _state["report"]
    if report is None or not report(exc):
        print("duet: " + str(exc), file=sys.stderr)

def enable():
    _state["wanted"] = True
    if not _state["active"]:
        _real_enable()
        return
    _state["tell"](True)
    if threading.get_ident() != _state["ui"]:
        _off_ui("gc.enable()")

def disable():
    _state["wanted"] = False
    if not _state["active"]:
        _real_disable()
        return
    _state["tell"](False)

def isenabled():
    return _state["wanted"] if _state["active"] else _real_isenabled()

enable.__doc__, disable.__doc__, isenabled.__doc__ = _real_enable.__doc__, _real_disable.__doc__, _real_isenabled.__doc__

def _watch(phase, info):
    if phase == "start" and _state["active"] and threading.get_ident() != _state["ui"]:
        _off_ui("a garbage collection (generation %d)" % info.get("generation", -1))

gc.enable, gc.disable, gc.isenabled = enable, disable, isenabled
gc.callbacks.append(_watch)

def enter(report, tell):
    _state["wanted"] = _real_isenabled()
    _state["ui"] = threading.get_ident()
    _state["seen"] = set()
    _state["report"] = report
    _state["tell"] = tell
    tell(_state["wanted"])
    _real_disable()
    _state["active"] = True
    return _state["wanted"]

def leave():
    _state["active"] = False
    if _state["wanted"]:
        _real_enable()

def step(gen):
    return _real_collect(gen)

def collect():
    return _real_collect()
