# The pure-PyGObject side of duet's side-by-side benchmarks (run with the
# system /usr/bin/python3). Each mode prints one number: nanoseconds per
# operation, or, for startup, nothing until the first frame.
import os
import sys
import time


def gtk():
    import gi

    gi.require_version("Gtk", "4.0")
    from gi.repository import Gtk

    return Gtk


def emit(n, handler=True):
    Gtk = gtk()
    b = Gtk.Button(label="x")
    if handler:
        b.connect("clicked", lambda button: None)
    t = time.perf_counter_ns()
    for _ in range(n):
        b.emit("clicked")
    return (time.perf_counter_ns() - t) / n


def call(n):
    f = lambda: None  # noqa: E731
    t = time.perf_counter_ns()
    for _ in range(n):
        f()
    return (time.perf_counter_ns() - t) / n


def call1(n):
    f = lambda x: None  # noqa: E731
    x = [1]
    t = time.perf_counter_ns()
    for _ in range(n):
        f(x)
    return (time.perf_counter_ns() - t) / n


def call3(n):
    f = lambda a, b, c, k=False: None  # noqa: E731
    t = time.perf_counter_ns()
    for _ in range(n):
        f(1, "two", 3.0, k=True)
    return (time.perf_counter_ns() - t) / n


def create(n):
    Gtk = gtk()
    b = Gtk.Button(label="x")
    t = time.perf_counter_ns()
    for _ in range(n):
        f = lambda button: None  # noqa: E731
        hid = b.connect("clicked", f)
        b.disconnect(hid)
        del f
    return (time.perf_counter_ns() - t) / n


def startup(idle=False):
    Gtk = gtk()
    from gi.repository import Gio

    app = Gtk.Application(application_id="org.duet.bench.PyStart", flags=Gio.ApplicationFlags.NON_UNIQUE)

    def activate(a):
        win = Gtk.ApplicationWindow(application=a, title="startup")
        win.set_child(Gtk.Button(label="button"))

        def mapped(w):
            def painted(clock):
                print("frame", flush=True)
                if not idle:
                    os._exit(0)

            w.get_frame_clock().connect("after-paint", painted)

        win.connect("map", mapped)
        win.present()

    app.connect("activate", activate)
    app.run(None)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode in ("startup", "idle"):
        startup(idle=mode == "idle")
    else:
        print("%.2f" % {"emit": emit, "emit0": lambda n: emit(n, False), "call": call, "call1": call1, "call3": call3, "create": create}[mode](int(sys.argv[2])))
