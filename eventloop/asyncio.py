# asyncio on duet's GLib loop (package eventloop).
#
# While the duet loop runs, the UI thread's running asyncio loop is a
# GLibEventLoop: asyncio's own selector event loop, with its selector and
# its iteration handed to GLib. A GSource (_Source) asks asyncio, before
# each poll, whether callbacks are ready and when the next timer is due;
# the file descriptors asyncio watches (sockets, its self-pipe, pidfds of
# subprocesses) are the source's unix fds, polled by GLib with everything
# else. When any is ready GLib dispatches the source, which runs one
# iteration of asyncio (_run_once) without blocking. No second loop, no
# thread, no polling: an idle loop sleeps in GLib's poll.
#
# Nothing here is loaded until the program imports asyncio (the import
# watch of duet_hooks loads this module then, and calls imported()), so
# apps that never use asyncio pay nothing; install() then starts the loop
# right after asyncio's own import.
import _thread
import sys

_state = {"loop": None, "finder": None, "running": False, "ui": None}


def _make_classes():
    import asyncio
    import os
    import selectors
    from asyncio import events, unix_events

    from gi.repository import GLib

    IN = GLib.IOCondition.IN | GLib.IOCondition.HUP | GLib.IOCondition.ERR
    OUT = GLib.IOCondition.OUT | GLib.IOCondition.ERR

    class GLibSelector(selectors._BaseSelectorImpl):
        """A selector whose file descriptors GLib polls (as the unix fds of
        the loop's source). select() never blocks: GLib has already polled,
        and the events it saw are what select returns."""

        def __init__(self, source):
            super().__init__()
            self._source = source
            self._tags = {}

        def _cond(self, events):
            c = GLib.IOCondition(0)
            if events & selectors.EVENT_READ:
                c |= IN
            if events & selectors.EVENT_WRITE:
                c |= OUT
            return c

        def register(self, fileobj, events, data=None):
            key = super().register(fileobj, events, data)
            self._tags[key.fd] = self._source.add_unix_fd(key.fd, self._cond(events))
            return key

        def unregister(self, fileobj):
            key = super().unregister(fileobj)
            tag = self._tags.pop(key.fd, None)
            if tag is not None and not self._source.is_destroyed():
                self._source.remove_unix_fd(tag)
            return key

        def modify(self, fileobj, events, data=None):
            key = self._fd_to_key.get(self._fileobj_lookup(fileobj))
            if key is not None and key.events != events:
                tag = self._tags.get(key.fd)
                if tag is not None:
                    self._source.modify_unix_fd(tag, self._cond(events))
            return super().modify(fileobj, events, data)

        def select(self, timeout=None):
            ready = []
            for fd, tag in list(self._tags.items()):
                revents = self._source.query_unix_fd(tag)
                if not revents:
                    continue
                key = self._fd_to_key.get(fd)
                if key is None:
                    continue
                ev = 0
                if revents & (GLib.IOCondition.IN | GLib.IOCondition.HUP | GLib.IOCondition.ERR):
                    ev |= selectors.EVENT_READ
                if revents & (GLib.IOCondition.OUT | GLib.IOCondition.ERR):
                    ev |= selectors.EVENT_WRITE
                ev &= key.events
                if ev:
                    ready.append((key, ev))
            return ready

        def close(self):
            for tag in self._tags.values():
                if not self._source.is_destroyed():
                    self._source.remove_unix_fd(tag)
            self._tags.clear()
            super().close()

    class _Source(GLib.Source):
        """Runs asyncio's iterations from GLib's loop."""

        def __init__(self):
            super().__init__()
            self.loop = None

        def _timeout(self):
            loop = self.loop
            if loop is None:
                return -1
            if loop._ready or loop._stopping or loop._duet_raise is not None:
                return 0
            if loop._scheduled and loop._scheduled[0]._cancelled:
                return 0  # asyncio's iteration drops it
            if loop._scheduled:
                delay = loop._scheduled[0]._when - loop.time()
                if delay <= 0:
                    return 0
                # Rounded up: waking a little late is right, early is a spin.
                return int(delay * 1000) + 1
            return -1

        def _running(self):
            # Callbacks run already (a task resumed by _duet_run_ready,
            # inside the invoke source's dispatch, that iterates the
            # context: a modal wait, a nested GLib.MainLoop): the source is
            # as blocked as GLib keeps it during its own dispatch, or asyncio
            # would be entered again and refuse the second task it steps.
            return self.loop is not None and self.loop._duet_depth > 0

        def prepare(self):
            if self._running():
                return False, -1
            t = self._timeout()
            return t == 0, t

        def check(self):
            if self._running():
                return False
            if self._timeout() == 0:
                return True
            sel = self.loop._selector if self.loop is not None else None
            if sel is not None:
                for tag in sel._tags.values():
                    if self.query_unix_fd(tag):
                        return True
            return False

        def dispatch(self, callback, args):
            loop = self.loop
            if loop is not None and not self._running():
                exc = loop._duet_raise
                if exc is not None:
                    loop._duet_raise = None
                    raise exc
                loop._duet_depth += 1
                try:
                    loop._run_once()
                finally:
                    loop._duet_depth -= 1
                # stop() means nothing to a loop duet drives: the duet loop
                # is stopped from Go (or by the app quitting).
                loop._stopping = False
            return GLib.SOURCE_CONTINUE

    class GLibEventLoop(unix_events._UnixSelectorEventLoop):
        """asyncio's selector event loop, iterated by duet's GLib loop."""
        _duet_loop = True  # futures made here are settled through duet's Invoke

        def __init__(self):
            self._glib_source = _Source()
            super().__init__(GLibSelector(self._glib_source))
            self._pidfd_watcher = None
            self._duet_depth = 0  # running callbacks: in _run_once or _duet_run_ready
            self._duet_raise = None  # what a callback of _duet_run_ready let out, for the source to raise

        def _duet_run_ready(self):
            """Runs the callbacks ready now, as _run_once's second half does,
            unless callbacks already run (this is nested in one: the
            outer _run_once owns the queue) or the loop debugs (_run_once
            times each callback). For a future just settled from outside
            the loop's own source (a Go async func's result, package
            callbacks): its awaiting task resumes now instead of a GLib
            iteration later. Timers and file descriptors wait for the
            source's next dispatch, which comes in the next iteration.
            What a callback lets out (SystemExit, KeyboardInterrupt) is
            raised by that dispatch, where _run_once would have let it
            out, not into the settle's caller."""
            if self._duet_depth or self._debug or self._closed or self._duet_raise is not None:
                return
            ready = self._ready
            self._duet_depth += 1
            try:
                for _ in range(len(ready)):
                    handle = ready.popleft()
                    if not handle._cancelled:
                        handle._run()
            except BaseException as e:
                self._duet_raise = e
            finally:
                self._duet_depth -= 1

        def _attach(self):
            self._glib_source.loop = self
            self._glib_source.attach(GLib.MainContext.default())
            self._thread_id = _thread.get_ident()
            self._old_agen_hooks = sys.get_asyncgen_hooks()
            sys.set_asyncgen_hooks(firstiter=self._asyncgen_firstiter_hook, finalizer=self._asyncgen_finalizer_hook)
            events._set_running_loop(self)

        def _detach(self):
            events._set_running_loop(None)
            sys.set_asyncgen_hooks(*self._old_agen_hooks)
            self._thread_id = None

        def close(self):
            super().close()
            if self._pidfd_watcher is not None:
                self._pidfd_watcher.close()
                self._pidfd_watcher = None
            self._glib_source.loop = None
            if not self._glib_source.is_destroyed():
                self._glib_source.destroy()

        async def _make_subprocess_transport(self, protocol, args, shell, stdin, stdout, stderr, bufsize, extra=None, **kwargs):
            # A pidfd per child, watched like any fd: no watcher thread.
            if self._pidfd_watcher is None:
                w = unix_events.PidfdChildWatcher()
                w.attach_loop(self)
                self._pidfd_watcher = w
            waiter = self.create_future()
            transp = unix_events._UnixSubprocessTransport(
                self, protocol, args, shell, stdin, stdout, stderr, bufsize, waiter=waiter, extra=extra, **kwargs
            )
            self._pidfd_watcher.add_child_handler(transp.get_pid(), self._child_watcher_callback, transp)
            try:
                await waiter
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException:
                transp.close()
                await transp._wait()
                raise
            return transp

        def default_exception_handler(self, context):
            # An exception nobody awaited goes where every other uncaught
            # Python exception in a duet app goes: sys.excepthook (which
            # duet routes to eventloop.OnPythonException), with asyncio's
            # description as a note.
            exc = context.get("exception")
            if exc is None or isinstance(exc, (SystemExit, KeyboardInterrupt)):
                return super().default_exception_handler(context)
            note = "asyncio: " + context.get("message", "unhandled exception in the event loop")
            for key in ("task", "future", "handle"):
                if key in context:
                    note += " (%s: %r)" % (key, context[key])
                    break
            exc.add_note(note)
            sys.excepthook(type(exc), exc, exc.__traceback__)

    return GLibEventLoop


def _start():
    """Makes the running loop of this (the UI) thread a GLibEventLoop."""
    if _state["loop"] is not None:
        return
    GLibEventLoop = _make_classes()
    loop = GLibEventLoop()
    loop._attach()
    _state["loop"] = loop


class _Finder:
    """Starts the loop right after the program first imports asyncio."""

    def find_spec(self, name, path=None, target=None):
        if name != "asyncio" or not _state["running"]:
            return None
        sys.meta_path.remove(self)
        _state["finder"] = None
        import importlib.util

        spec = importlib.util.find_spec("asyncio")
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        class Loader:
            def __getattr__(self, name):
                return getattr(loader, name)

            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                exec_module(module)
                if _thread.get_ident() == _state["ui"]:
                    _start()
                else:
                    # Imported on another thread: the UI thread starts the
                    # loop in its next iteration.
                    from gi.repository import GLib

                    GLib.idle_add(_start_once)

        spec.loader = Loader()
        return spec


def _start_once():
    if _state["running"]:
        _start()
    return False


def install(ui):
    """Called when the duet loop runs and the program imports asyncio (or
    had); ui is the UI thread's identity."""
    _state["running"] = True
    _state["ui"] = ui
    if "asyncio" in sys.modules:
        _start()
    elif _state["finder"] is None:
        f = _Finder()
        _state["finder"] = f
        sys.meta_path.insert(0, f)


def imported(ui, name=None, path=None, target=None):
    """The program imports asyncio while the duet loop runs: from inside
    that import (name, path and target are find_spec's; the spec returned
    is that of the finder install() puts in place), or before the loop
    started (no name)."""
    install(ui)
    f = _state["finder"]
    if name is None or f is None:
        return None
    return f.find_spec(name, path, target)


class NotRunning(RuntimeError):
    """The duet loop is not running, or is ending: its end settles the
    tasks left and iterates GLib meanwhile, which may run a start queued
    before. Go reads it as ErrNotRunning."""


def running_loop():
    """The GLibEventLoop of the running duet loop, started if need be."""
    if not _state["running"]:
        raise NotRunning("the duet loop is not running")
    if _state["loop"] is None:
        import asyncio  # noqa: F401  (the finder starts the loop)

        _start()
    return _state["loop"]


def start_task(fn, args, done):
    """Runs fn(*args), a coroutine function (or anything returning an
    awaitable), as a task on the duet loop; done(task) runs when it ends."""
    import asyncio

    loop = running_loop()
    aw = fn(*args)
    if not asyncio.iscoroutine(aw) and not asyncio.isfuture(aw) and not hasattr(aw, "__await__"):
        raise TypeError("%r returned %s, not an awaitable" % (fn, type(aw).__name__))
    task = asyncio.ensure_future(aw, loop=loop)
    task.add_done_callback(done)
    return task


def uninstall(grace):
    """Called on the UI thread when the duet loop is about to return: what
    asyncio.run does at its end, bounded by grace seconds of GLib
    iterations: cancel the tasks left, let them finish, close async
    generators and the default executor, close the loop."""
    _state["running"] = False
    f = _state["finder"]
    if f is not None:
        _state["finder"] = None
        try:
            sys.meta_path.remove(f)
        except ValueError:
            pass
    loop = _state["loop"]
    if loop is None:
        return
    _state["loop"] = None
    import asyncio
    import time

    from gi.repository import GLib

    ctx = GLib.MainContext.default()

    def settle(fut):
        # Bounded: a task that ignores its cancellation does not hold the
        # app's exit hostage. A short sleep when nothing was ready, since
        # a blocking iteration could outlast the bound.
        deadline = time.monotonic() + grace
        while not fut.done() and time.monotonic() < deadline:
            if not ctx.iteration(False):
                time.sleep(0.001)
        if not fut.done():
            # Past the grace (or none: AsyncioGrace(0)): cancelled, and
            # given the few iterations a cancellation takes, so that no
            # task is left pending to be destroyed with a warning.
            fut.cancel()
            for _ in range(100):
                if fut.done():
                    break
                ctx.iteration(False)
            if fut.done() and not fut.cancelled():
                fut.exception()  # retrieved: the gather's CancelledError is ours

    try:
        tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            settle(asyncio.gather(*tasks, return_exceptions=True))
        for t in tasks:
            if t.done() and not t.cancelled() and t.exception() is not None:
                loop.call_exception_handler(
                    {"message": "unhandled exception during the duet loop's shutdown", "exception": t.exception(), "task": t}
                )
        settle(asyncio.ensure_future(loop.shutdown_asyncgens(), loop=loop))
        settle(asyncio.ensure_future(loop.shutdown_default_executor(), loop=loop))
    finally:
        loop._detach()
        loop.close()
