# _duet: Python-side helpers for the Go package pygi. Installed into
# sys.modules['_duet'] when the interpreter starts. Everything here runs with
# the GIL held, called from Go.
import sys
import gc as _gc

# The collector's own collect, as the interpreter starts: the event loop's
# collections call it (eventloop's collector.py), not whatever a program
# may put in gc.collect later.
gc_collect = _gc.collect

# traceback (with linecache and tokenize) is imported where an error is
# formatted, not here: this module runs as the interpreter starts, and a
# program that raises nothing should not pay for it on its way to the
# first frame.


def _qualname(t):
    mod = getattr(t, "__module__", None)
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", "?")
    if not isinstance(name, str):
        name = repr(name)
    if mod in (None, "builtins"):
        return name
    if not isinstance(mod, str):  # a class may set anything there
        mod = repr(mod)
    return mod + "." + name


def exc_info(e):
    """(type name, message, traceback text, MRO names) for an exception."""
    t = type(e)
    try:
        msg = str(e)
    except BaseException as inner:  # a broken __str__ must not hide the error
        msg = "<unprintable %s: %s>" % (t.__name__, type(inner).__name__)
    tb = format_exception(t, e, e.__traceback__)
    mro = [_qualname(c) for c in t.__mro__ if c is not object]
    return (_qualname(t), msg, tb, mro)


_traceback = None


def format_exception(t, e, tb):
    """traceback.format_exception's text. traceback is imported on first
    use (start-up does not need it) and kept: where importing it fails (at
    the recursion limit, or once finalisation has emptied sys.modules) the
    text is made without it, every frame named, no source lines."""
    global _traceback
    try:
        if _traceback is None:
            import traceback

            _traceback = traceback
        return "".join(_traceback.format_exception(t, e, tb))
    except BaseException:
        pass
    try:
        lines = ["Traceback (most recent call last):\n"]
        while tb is not None:
            code = tb.tb_frame.f_code
            lines.append('  File "%s", line %s, in %s\n' % (code.co_filename, tb.tb_lineno, code.co_name))
            tb = tb.tb_next
        if len(lines) == 1:
            lines = []
        try:
            text = str(e)
        except BaseException:
            text = "<unprintable>"
        lines.append("%s: %s\n" % (_qualname(t), text) if text else "%s\n" % _qualname(t))
        return "".join(lines)
    except BaseException:
        return ""


def exec_module(name, src, filename, compiled=None):
    """pygi.ExecModule: src run as a new module called name, registered in
    sys.modules. A name Python already knows as another module is refused;
    if src raises, sys.modules is left as it was. compiled, when given, is
    src compiled ahead (MAGIC_NUMBER, then marshal's bytes; see
    internal/pysrc's precompiled.go), used instead of compiling src when
    this interpreter's bytecode is the one it holds."""
    import importlib.util
    import os
    import types

    old = sys.modules.get(name)
    if old is not None and not getattr(old, "__duet_module__", False):
        where = getattr(old, "__file__", None) or "built in"
        raise ImportError("module name %r is taken by Python's own %r (%s): a module loaded under it would shadow it for all the code that imports it; give the file another name" % (name, name, where), name=name)
    if old is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        same = spec is not None and spec.origin and os.path.exists(filename) and \
            os.path.realpath(spec.origin) == os.path.realpath(filename)
        if spec is not None and not same:  # the very file being loaded is no other module
            raise ImportError("module name %r is that of an importable module (%s): a module loaded under it would shadow it for all the code that imports it; give the file another name" % (name, spec.origin or "a package"), name=name)
    m = types.ModuleType(name)
    m.__file__ = filename
    m.__duet_module__ = True
    code = None
    if compiled is not None and sys.flags.optimize == 0 and compiled[:4] == importlib.util.MAGIC_NUMBER:
        import marshal

        # What is not the code of this very file (damaged bytes, another
        # object) is not run: the source is compiled instead.
        try:
            code = marshal.loads(memoryview(compiled)[4:])
        except Exception:
            code = None
        if type(code) is not types.CodeType or code.co_filename != filename:
            code = None
    if code is None:
        code = compile(src, filename, "exec")
    sys.modules[name] = m
    try:
        exec(code, m.__dict__)
    except BaseException:
        if old is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = old
        raise
    return m


def interpreter_info():
    """Which interpreter is embedded, for error messages."""
    return "Python %s (prefix %s), sys.path = %r" % (
        sys.version.split()[0],
        sys.prefix,
        sys.path,
    )


_threads_stopping = None  # the thread running threading's atexit functions


def shutdown_threads(timeout):
    """_shutdown_threads, with python3's handling of what it raises: a
    signal handler's exception (sys.exit's SystemExit, KeyboardInterrupt)
    raised while it waits is printed and ignored, and the wait ends, as
    python3's threading shutdown ends at exit; the threads still running
    are left behind, as python3 leaves them, not waited for by
    Py_FinalizeEx."""
    import threading

    try:
        return _shutdown_threads(timeout)
    except BaseException:
        import traceback

        print("Exception ignored in: %r" % (threading,), file=sys.stderr)
        traceback.print_exc()
        locks = getattr(threading, "_shutdown_locks", None)
        guard = getattr(threading, "_shutdown_locks_lock", None)
        if locks is not None and guard is not None:
            with guard:
                locks.clear()
        # Nor does Py_FinalizeEx's own threading shutdown run the atexit
        # functions again (an executor's would join its busy workers).
        atexits = getattr(threading, "_threading_atexits", None)
        if atexits is not None:
            atexits.clear()
        main = threading.main_thread()
        if not main._is_stopped and main.ident == threading.get_ident():
            tlock = getattr(main, "_tstate_lock", None)
            if tlock is not None and tlock.locked():
                tlock.release()
            main._stop()
        return []


def _shutdown_threads(timeout):
    """threading's own shutdown (what Py_FinalizeEx runs, and python3 at
    exit: its atexit functions, such as the executors' that stop idle
    workers, the main thread marked stopped, then a wait for every thread
    that is not a daemon), bounded by timeout seconds this call. Returns the
    names of the threads still running; [] when done. Called again, it goes
    on where it stopped."""
    import threading
    import time

    global _threads_stopping
    end = time.monotonic() + timeout
    main = threading.main_thread()
    locks = getattr(threading, "_shutdown_locks", None)
    guard = getattr(threading, "_shutdown_locks_lock", None)
    if _threads_stopping is None:
        atexits = list(reversed(getattr(threading, "_threading_atexits", [])))

        def run_atexits():
            for call in atexits:
                try:
                    call()
                except BaseException:
                    import traceback

                    print("Exception ignored on threading shutdown:", file=sys.stderr)
                    traceback.print_exc()

        threading._SHUTTING_DOWN = True
        # On a thread of its own, so that an executor's join of a busy
        # worker cannot outlast the bound.
        _threads_stopping = threading.Thread(target=run_atexits, name="threading shutdown", daemon=True)
        _threads_stopping.start()
    _threads_stopping.join(max(end - time.monotonic(), 0))
    if not _threads_stopping.is_alive() and not main._is_stopped and main.ident == threading.get_ident():
        tlock = getattr(main, "_tstate_lock", None)
        if tlock is not None and tlock.locked():
            tlock.release()
        main._stop()

    def running():
        me = threading.current_thread()
        return [t.name for t in threading.enumerate()
                if t is not me and t is not main and not t.daemon and t.is_alive()]

    if _threads_stopping.is_alive():
        return running() or ["threading's atexit functions"]
    if locks is None or guard is None:
        return waiting_threads(max(end - time.monotonic(), 0))
    while True:
        with guard:
            pending = list(locks)
        if not pending:
            return []
        for lock in pending:
            if not lock.acquire(timeout=max(end - time.monotonic(), 0)):
                return running() or ["a thread ending"]
            lock.release()
            with guard:
                locks.discard(lock)


def waiting_threads(timeout):
    """Joins, for at most timeout seconds, the threads that are not daemons
    (threading's shutdown inside Py_FinalizeEx would wait for them for
    ever); returns the names of those still running."""
    import threading
    import time

    end = time.monotonic() + timeout
    me = threading.current_thread()
    while True:
        left = [t for t in threading.enumerate()
                if t is not me and t is not threading.main_thread() and not t.daemon and t.is_alive()]
        rest = end - time.monotonic()
        if not left or rest <= 0:
            return [t.name for t in left]
        left[0].join(rest)
