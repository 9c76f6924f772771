# _duet: Python-side helpers for the Go package pygi. Installed into
# sys.modules['_duet'] when the interpreter starts. Everything here runs with
# the GIL held, called from Go.
import sys
import traceback


def _qualname(t):
    mod = getattr(t, "__module__", None)
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", "?")
    if mod in (None, "builtins"):
        return name
    return mod + "." + name


def exc_info(e):
    """(type name, message, traceback text, MRO names) for an exception."""
    t = type(e)
    try:
        msg = str(e)
    except BaseException as inner:  # a broken __str__ must not hide the error
        msg = "<unprintable %s: %s>" % (t.__name__, type(inner).__name__)
    try:
        tb = "".join(traceback.format_exception(t, e, e.__traceback__))
    except BaseException:
        tb = ""
    mro = [_qualname(c) for c in t.__mro__ if c is not object]
    return (_qualname(t), msg, tb, mro)


def interpreter_info():
    """Which interpreter is embedded, for error messages."""
    return "Python %s (prefix %s), sys.path = %r" % (
        sys.version.split()[0],
        sys.prefix,
        sys.path,
    )


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
