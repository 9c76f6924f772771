# QuoteFeed: a Python widget that does its work with asyncio, on duet's loop.
#
# fetch(n) connects to a quote server with asyncio.open_connection, asks for
# n quotes and shows each as it arrives, annotated by an awaited Go async
# func (score, given by the Go program). The Fetch button starts the same
# as a task. Nothing here knows about Go beyond the score callable.
import asyncio

from gi.repository import GObject, Gtk


class QuoteFeed(Gtk.Box):
    __gtype_name__ = "QuoteFeed"

    __gsignals__ = {"fetched": (GObject.SignalFlags.RUN_LAST, None, (int,))}

    def __init__(self, host, port, score):
        super().__init__(orientation=Gtk.Orientation.VERTICAL, spacing=8)
        self.host, self.port, self.score = host, port, score
        for side in ("top", "bottom", "start", "end"):
            getattr(self, "set_margin_" + side)(12)
        self.status = Gtk.Label(label="press Fetch", xalign=0)
        button = Gtk.Button(label="Fetch 5 quotes")
        # The emitter, not self: no handler on a child holds its parent.
        button.connect("clicked", lambda b: b.get_parent().start_fetch(5))
        self.list = Gtk.ListBox()
        self.list.set_vexpand(True)
        self.append(button)
        self.append(self.status)
        self.append(self.list)
        self.task = None

    def start_fetch(self, n):
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self.fetch(n))

    async def fetch(self, n):
        """Fetches n quotes; returns the lines shown."""
        self.status.set_text("connecting to %s:%d..." % (self.host, self.port))
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            writer.write(b"%d\n" % n)
            await writer.drain()
            shown = []
            while True:
                line = await reader.readline()
                if not line:
                    break
                quote = line.decode().strip()
                score = await self.score(quote)  # a Go func, on a goroutine
                text = "%s  (score %d)" % (quote, score)
                self.list.append(Gtk.Label(label=text, xalign=0))
                shown.append(text)
                self.status.set_text("%d of %d" % (len(shown), n))
        finally:
            writer.close()
            await writer.wait_closed()
        self.status.set_text("fetched %d quotes" % len(shown))
        self.emit("fetched", len(shown))
        return shown
