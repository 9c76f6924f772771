# duet_callbacks: the Python side of package callbacks: the exceptions that
# carry Go errors and panics into Python (errors.go), and the coroutine
# functions over Go async funcs (async.go).

class GoError(Exception):
    """An error returned by a Go callback; __go_error__ carries it back to Go."""

class GoPanic(BaseException):
    """A Go panic recovered at the boundary. It derives from BaseException
    so that 'except Exception' does not swallow it by accident; go_stack
    holds the Go stack."""

def make(cls, message, handle, stack):
    e = cls(message)
    e.__go_error__ = handle
    e.go_stack = stack
    if stack:
        e.add_note("Go stack:\n" + stack.rstrip("\n"))
    return e

def make_async(start, cancel, name):
    """A coroutine function over a Go async func (callbacks.Async): start
    runs the Go func on a goroutine, which settles the future on the loop
    (duet's Invoke, not call_soon_threadsafe: no GIL taken off the UI
    thread, no self-pipe), and returns the await's token; cancel(token)
    cancels the Go func's context."""
    import asyncio

    async def call(*args):
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        token = start(fut, getattr(loop, "_duet_loop", False), *args)
        try:
            return await fut
        except asyncio.CancelledError:
            cancel(token)
            raise

    call.__name__ = call.__qualname__ = name
    return call

def settle(fut, ok, value):
    """Runs on duet's UI thread for a future of the loop running there,
    which is set directly, and on the Go func's goroutine for one of
    another loop (asyncio.run in a Python thread, say), which is set on its
    own loop through call_soon_threadsafe, which also wakes it."""
    import asyncio

    loop = fut.get_loop()
    if loop.is_closed():
        return  # nobody awaits any more
    if asyncio._get_running_loop() is loop:
        _settle_now(fut, ok, value)
        # duet's loop resumes the awaiting task at once (eventloop's
        # asyncio.py): otherwise that takes another GLib iteration.
        run_ready = getattr(loop, "_duet_run_ready", None)
        if run_ready is not None:
            run_ready()
    else:
        try:
            loop.call_soon_threadsafe(_settle_now, fut, ok, value)
        except RuntimeError:
            pass  # closed meanwhile

def _settle_now(fut, ok, value):
    if fut.done():
        return  # cancelled
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)
