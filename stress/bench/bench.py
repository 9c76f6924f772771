# The pure-PyGObject side of duet's side-by-side benchmarks (run with the
# system /usr/bin/python3). Each mode prints one number: nanoseconds per
# operation, or, for startup, nothing until the first frame; scroll prints
# the line of figures package stress/bench/scroll describes.
import os
import sys
import time


def gtk():
    import gi

    gi.require_version("Gtk", "4.0")
    from gi.repository import Gtk

    return Gtk


def emit(n, handler=True, use=False):
    Gtk = gtk()
    b = Gtk.Button(label="x")
    if use:
        b.connect("clicked", lambda button: button.get_label())
    elif handler:
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


# The scroll's constants, as stress/bench/scroll has them.
SCROLL_PAGES = 5
SCROLL_WIDTH, SCROLL_HEIGHT = 400, 600
SCROLL_SETTLE_MS = 500


class Recorder:
    """stress/bench/scroll's Recorder, in Python."""

    def __init__(self):
        self.armed = self.moving = self.last = False
        self.began = self.frame_start = self.last_paint = 0
        self.cpu_start = 0
        self.work, self.cpu, self.gaps = [], [], []
        self.binds = self.setups = self.in_handlers = 0

    def before_paint(self, clock):
        self.frame_start, self.cpu_start = time.perf_counter_ns(), time.thread_time_ns()

    def tick(self, value, upper, page):
        if not self.armed or self.last:
            return None
        if not self.moving:
            self.moving, self.began = True, self.frame_start
        end = upper - page
        nxt = min(value + SCROLL_PAGES * page, end)
        self.last = nxt >= end
        return nxt

    def after_paint(self):
        now, cpu = time.perf_counter_ns(), time.thread_time_ns()
        if self.moving:
            self.work.append(now - self.frame_start)
            self.cpu.append(cpu - self.cpu_start)
            if len(self.work) > 1:
                self.gaps.append(now - self.last_paint)
        self.last_paint = now
        return self.last

    def line(self):
        def pct(v, p):
            if not v:
                return 0
            s = sorted(v)
            return s[min(len(s) * p // 100, len(s) - 1)]

        def ms(ns):
            return ns / 1e6

        w, g = self.work, self.gaps
        return "%d %.3f %.3f %.3f %d %.3f %.3f %d %.3f %.3f %.3f %d %d %.1f" % (
            len(w), ms(self.last_paint - self.began), ms(pct(w, 50)), ms(pct(w, 99)),
            sum(1 for x in w if x > 16_000_000), ms(pct(self.cpu, 50)), ms(pct(self.cpu, 99)),
            sum(1 for x in self.cpu if x > 16_000_000), ms(pct(g, 50)), ms(pct(g, 99)), ms(pct(g, 100)),
            self.binds, self.setups, self.in_handlers / max(self.binds, 1))


def scroll(n):
    Gtk = gtk()
    from gi.repository import Gio, GLib

    r = Recorder()
    clock_ns = time.perf_counter_ns

    def setup(factory, item):
        t = clock_ns()
        item.set_child(Gtk.Label())
        r.in_handlers += clock_ns() - t
        r.setups += 1

    def bind(factory, item):
        t = clock_ns()
        item.get_child().set_label(item.get_item().get_string())
        r.in_handlers += clock_ns() - t
        r.binds += 1

    def unbind(factory, item):
        t = clock_ns()
        item.get_child().set_label("")
        r.in_handlers += clock_ns() - t

    app = Gtk.Application(application_id="org.duet.bench.PyScroll", flags=Gio.ApplicationFlags.NON_UNIQUE)

    def activate(a):
        win = Gtk.ApplicationWindow(application=a, title="scroll")
        win.set_default_size(SCROLL_WIDTH, SCROLL_HEIGHT)
        win.set_resizable(False)
        factory = Gtk.SignalListItemFactory()
        factory.connect("setup", setup)
        factory.connect("bind", bind)
        factory.connect("unbind", unbind)
        model = Gtk.StringList.new(["item %d" % i for i in range(n)])
        lv = Gtk.ListView(model=Gtk.NoSelection(model=model), factory=factory)
        win.set_child(Gtk.ScrolledWindow(child=lv))
        adj = lv.get_vadjustment()

        def tick(widget, clock):
            v = r.tick(adj.get_value(), adj.get_upper(), adj.get_page_size())
            if v is not None:
                adj.set_value(v)
            return True

        lv.add_tick_callback(tick)

        def painted(clock):
            if r.after_paint():
                print(r.line(), flush=True)
                os._exit(0)

        def mapped(w):
            clock = w.get_frame_clock()
            clock.connect("before-paint", r.before_paint)
            clock.connect("after-paint", painted)
            def arm():
                r.armed = True
                return False

            GLib.timeout_add(SCROLL_SETTLE_MS, arm)

        win.connect("map", mapped)
        win.present()

    app.connect("activate", activate)
    app.run(None)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode in ("startup", "idle"):
        startup(idle=mode == "idle")
    elif mode == "scroll":
        scroll(int(sys.argv[2]))
    else:
        print("%.2f" % {"emit": emit, "emit0": lambda n: emit(n, False), "emituse": lambda n: emit(n, use=True), "call": call, "call1": call1, "call3": call3, "create": create}[mode](int(sys.argv[2])))
