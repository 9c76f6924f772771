# duet_hooks: the hooks package eventloop puts into Python. Exceptions
# nobody caught go to Go (OnPythonException), Python's output channels to
# Go's log/slog while routed (RouteLogs), and import watches load duet
# code that goes with a module only when the program imports that module.

import sys, threading
_orig = (sys.excepthook, threading.excepthook, sys.unraisablehook)
# traceback and logging are imported by the first route(), not here: this
# module loads as the loop starts, and most programs never route their
# logs (they cost a few milliseconds on the way to the first frame).
_logs = {"emit": None, "traceback": None}

def _thread():
    return threading.current_thread().name

def install(report):
    def excepthook(t, v, tb):
        if v is None or not report(v):
            _orig[0](t, v, tb)
    def thread_hook(args):
        if args.exc_value is None or not report(args.exc_value):
            _orig[1](args)
    def unraisable_hook(u):
        emit = _logs["emit"]
        if emit is not None:
            traceback = _logs["traceback"]
            text = "".join(traceback.format_exception(u.exc_type, u.exc_value, u.exc_traceback)) if u.exc_type else ""
            what = u.err_msg or "Exception ignored in"
            if u.object is not None:
                what += ": " + repr(u.object)
            tb = u.exc_traceback
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            f, n = (tb.tb_frame.f_code.co_filename, tb.tb_lineno) if tb is not None else ("", 0)
            emit(40, "py.unraisable", what + "\n" + text.rstrip(), f, n, _thread())
            if u.exc_value is not None:
                report(u.exc_value)
            return
        if u.exc_value is None or not report(u.exc_value):
            _orig[2](u)
    sys.excepthook = excepthook
    threading.excepthook = thread_hook
    sys.unraisablehook = unraisable_hook

# Python's output channels, routed to Go while emit is set (RouteLogs).
import warnings
_orig_showwarning = warnings.showwarning
_orig_last_resort = None  # logging's own, read by the first route()
GoHandler = None  # the class, made by the first route()

def _showwarning(message, category, filename, lineno, file=None, line=None):
    emit = _logs["emit"]
    if emit is None or file is not None:
        return _orig_showwarning(message, category, filename, lineno, file, line)
    emit(30, "py.warnings", "%s: %s" % (category.__name__, message), filename, lineno, _thread())

def _logging():
    """logging, with GoHandler made at the first route(): the last resort
    kept (and put back by route(None)) is the one in place when routing
    first began."""
    global GoHandler, _orig_last_resort
    import logging, traceback
    _logs["traceback"] = traceback
    if GoHandler is not None:
        return logging
    _orig_last_resort = logging.lastResort

    class GoHandler(logging.Handler):
        """Hands records to Go's log/slog (duet's eventloop.RouteLogs)."""
        def emit(self, record):
            emit = _logs["emit"]
            if emit is None:
                return _orig_last_resort.handle(record) if _orig_last_resort else None
            try:
                msg = record.getMessage()
                if record.exc_info:
                    msg += "\n" + logging.Formatter().formatException(record.exc_info)
                emit(record.levelno, record.name, msg, record.pathname, record.lineno, record.threadName or _thread())
            except Exception:
                self.handleError(record)

    return logging

warnings.showwarning = _showwarning

def route(emit):
    logging = _logging()
    _logs["emit"] = emit
    # Records that reach no handler of the app's own configuration go to
    # logging's last resort (python3 prints them on stderr): that is where
    # they go to Go instead. An app that configures logging keeps it.
    logging.lastResort = GoHandler(logging.WARNING) if emit is not None else _orig_last_resort

# Import watches: what goes with a module the program may never import
# (asyncio's loop) is loaded when the program first imports that module,
# not before. A watch is a meta path finder ahead of the others: at that
# first import it takes itself out, loads its duet module through _load
# (duet's loader, a Go callable set by package eventloop) and hands the
# import over to that module's imported(ui, name, path, target), which
# returns the spec, or None for the usual finders.
_load = None
_watches = {}


class ImportWatch:
    def __init__(self, name, module, ui):
        self.name, self.module, self.ui = name, module, ui

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        unwatch(name)
        return _load(self.module).imported(self.ui, name, path, target)


def watch(name, module):
    """Called on the UI thread when the loop starts. A module imported
    already has its duet module loaded now."""
    ui = threading.get_ident()
    if name in sys.modules:
        _load(module).imported(ui)
        return
    unwatch(name)
    w = ImportWatch(name, module, ui)
    _watches[name] = w
    sys.meta_path.insert(0, w)


def unwatch(name):
    w = _watches.pop(name, None)
    if w is not None:
        try:
            sys.meta_path.remove(w)
        except ValueError:
            pass
