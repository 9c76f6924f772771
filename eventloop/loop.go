package eventloop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/report"
	"github.com/duet-gtk/duet/pygi"
)

func init() {
	runtime.LockOSThread() // main stays on the main OS thread: the UI thread
	capi.SetLoopHandlers(dispatch, fireTimer)
	// The UI thread owns GLib's default context for the life of the process
	// (internal/capi/loop.c says why). Package initialisation runs on it.
	if lifetime.IsMain() && !capi.LoopOwnDefault() {
		fmt.Fprintln(os.Stderr, "eventloop: another thread owns GLib's default main context; duet's loop cannot run")
	}
}

var (
	// ErrNotMain is returned by every duet function that GTK allows only on
	// the UI (main) thread when it is called from another goroutine; the
	// loop itself must run there too. It is one value for all of duet's
	// packages: test with errors.Is.
	ErrNotMain = lifetime.ErrNotMain
	// ErrRunning: the loop is already running.
	ErrRunning = errors.New("eventloop: the loop is already running")
)

// loop state: one loop at a time, on the main thread.
var state struct {
	mu      sync.Mutex
	running atomic.Bool
	quit    func()          // quits whatever drives the loop now
	signals *signalHandling // the running loop's
	run     context.Context // ends when the running loop has stopped
}

// runContext is a context that ends when the loop that runs now stops (one
// that has ended already when no loop runs): what waits for the loop must
// not outlive it.
func runContext() context.Context {
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.run == nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	return state.run
}

// untilLoopStops returns ctx ended also when the running loop stops.
func untilLoopStops(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(runContext(), cancel)
	return c, func() { stop(); cancel() }
}

// Running reports whether the loop is running.
func Running() bool { return state.running.Load() }

// IsMain reports whether the caller runs on the main (UI) OS thread. Code
// called from the loop always does.
func IsMain() bool { return lifetime.IsMain() }

// RequireMain returns nil on the UI thread, and elsewhere an error wrapping
// ErrNotMain that names what: the check every UI-only function makes.
func RequireMain(what string) error { return lifetime.RequireMain(what) }

// Run runs GLib's default main context on the main thread until Quit is
// called, ctx ends, or SIGINT/SIGTERM asks for the ordered shutdown (the
// error is then a *SignalError; see "Signals" in the package doc). It
// returns nil after Quit.
func Run(ctx context.Context, opts ...Option) error {
	l := capi.NewMainLoop()
	defer l.Unref()
	return Drive(ctx, l.Run, l.Quit, opts...)
}

// Drive makes run, a call that blocks iterating the default main context
// (GLib's main loop, or g_application_run), the event loop: while it runs,
// Invoke, timers, the release of Python references Go dropped and the
// signal handling all work through it, and quit ends it. app uses it to run
// a GApplication. Same rules as Run: main thread, one at a time.
func Drive(ctx context.Context, run func(), quit func(), opts ...Option) error {
	if err := RequireMain("eventloop.Run"); err != nil {
		return err
	}
	cfg := newConfig(opts)
	state.mu.Lock()
	if state.running.Load() {
		state.mu.Unlock()
		return ErrRunning
	}
	if err := lifetime.ClaimLoop(); err != nil {
		state.mu.Unlock()
		return err
	}
	backlog.lastRun.Store(int64(time.Since(epoch))) // a loop just begun is not stuck
	state.running.Store(true)
	// stop quits once; what Run returns is the first reason, except that
	// a signal that arrives while the loop ends for another reason (Quit,
	// ctx) is what it reports (an app exits 128+n, as the signal asked).
	var mu sync.Mutex
	var cause error
	var quitting bool
	stop := func(err error) {
		mu.Lock()
		var se, was *SignalError
		if cause == nil || errors.As(err, &se) && !errors.As(cause, &was) {
			cause = err
		}
		first := !quitting
		quitting = true
		mu.Unlock()
		if first {
			quit()
		}
	}
	state.quit = func() { stop(nil) }
	runCtx, endRun := context.WithCancel(context.Background())
	state.run = runCtx
	state.mu.Unlock()
	defer func() {
		state.mu.Lock()
		state.running.Store(false)
		state.quit = nil
		state.run = nil
		state.mu.Unlock()
		endRun()
		lifetime.UnclaimLoop()
	}()

	capi.LoopSetup()
	capi.LoopWrapPoll(true)
	defer capi.LoopWrapPoll(false)
	if err := pygi.Init(pygi.Options{}); err != nil {
		return err
	}
	if err := installExceptionHooks(); err != nil {
		return err
	}
	closeAsyncio, err := startAsyncio()
	if err != nil {
		return err
	}
	var asyncioClosed bool
	stopAsyncio := func() {
		if !asyncioClosed {
			asyncioClosed = true
			closeAsyncio()
		}
	}
	defer stopAsyncio() // an early return below
	// GTK objects must be finalised on this thread: Python references are
	// released here, and Python's cycle collector runs here too.
	stopped := make(chan struct{})
	openPosts()
	lifetime.LoopStarted(func(fn func()) error { return onLoop(stopped, fn) }, postUI, func() { enqueue(drainReleases) })
	defer func() {
		closePosts()
		lifetime.LoopStopped()
		close(stopped)
	}()
	stopGC, err := collectOnUIThread()
	if err != nil {
		return err
	}
	defer stopGC()

	owned := loopSignals(cfg)
	sh := newSignalHandling(stop, owned, cfg.signalGrace)
	asyncioGrace.Store(int64(cfg.asyncioGrace))
	state.mu.Lock()
	state.signals = sh
	state.mu.Unlock()
	lifetime.SetSignalPolicy(sh.onSignal, owned...)
	lifetime.SetKeyboardInterruptHook(keyboardInterrupt)
	lifetime.SetSignalRanHook(sh.handlerRan)
	defer func() {
		lifetime.SetSignalRanHook(nil)
		lifetime.SetKeyboardInterruptHook(nil)
		sh.loopReturned()
		lifetime.SetSignalPolicy(nil)
		state.mu.Lock()
		state.signals = nil
		state.mu.Unlock()
	}()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			stop(ctx.Err())
		case <-done:
		}
	}()
	// Work queued before the loop started runs first.
	capi.LoopPost()
	run()
	sh.uiBack()
	// asyncio's end, as asyncio.run's: the tasks left are cancelled and
	// given a bounded time to finish, with the context still iterated.
	stopAsyncio()
	// Release what Go dropped while the loop ran, before anyone finalises.
	drainReleases()
	mu.Lock()
	defer mu.Unlock()
	return cause
}

// Quit ends the running loop; safe from any goroutine. It does nothing when
// no loop runs.
func Quit() {
	state.mu.Lock()
	q := state.quit
	state.mu.Unlock()
	if q != nil {
		q()
	}
}

func drainReleases() {
	if err := pygi.Drain(); err != nil && !errors.Is(err, pygi.ErrFinalized) {
		reportError("eventloop: releasing Python references", err)
	}
}

// ---- Invoke ---------------------------------------------------------------------

// queue holds functions waiting for the loop. A mutex-protected slice: one
// lock per post; the loop takes all of it at once and runs it in turns (see
// dispatch).
var queue struct {
	mu    sync.Mutex
	items []func()
	spare []func()
}

// Invoke queues fn to run on the loop, in order with every other Invoke
// from the same goroutine. It is safe from any goroutine and does not wait
// for the loop, except during a flood (below).
// A panic in fn is recovered and reported (see OnPanic); the loop
// keeps running. Work queued while no loop runs waits for the next one.
//
// A flood is paced: while more than PaceAbove Invokes wait for the running
// loop, a goroutine's Invoke first waits, at most PaceFor, for the loop to
// catch up, so that senders go at about the loop's speed and the backlog
// stays what the loop runs in a few milliseconds (an InvokeWait behind it
// comes back in that time, not after every Invoke of the flood). The wait
// is bounded, so Invoke never deadlocks on a loop that waits for the
// sender (a lock it holds), and a loop that has run no Invoke for 20 ms
// while some waited, and whose thread waits (stuck, not idle: a burst into
// an idle loop is paced from its first Invoke; not busy: a loop that
// computes, or waits for a CPU, paces its senders) is not waited for until
// it runs one again. A loop
// whose every Invoke takes longer than PaceFor falls behind a sender that
// keeps sending, but only up to PaceCap queued: past that, a sender waits
// for as long as the loop keeps its pace, until at most PaceCap of the
// Invokes queued before its own are left (Invokes queued after it, the
// loop's own say, do not hold it), so the backlog stays near PaceCap:
// behind a slow loop that wait is as long as the loop takes to run them.
// A loop busy in an Invoke (its thread running, or ready to run on a
// loaded machine) keeps its pace, however long the Invoke. A loop whose
// thread waits (for a lock, the GIL, I/O) and that has finished no Invoke
// for twice its recent time between two (at least PaceFor) is taken for
// held up there, by a lock the sender holds say, and the sender goes on
// after that wait: a sender that holds a lock the loop's next Invoke
// takes holds the loop that long an Invoke past PaceCap, about PaceFor
// behind small Invokes and up to 20 ms behind Invokes of 10 ms (do not
// Invoke while holding a lock your Invoked functions take), and each
// other waiting sender gets one Invoke through. InvokeWait waits there no
// longer than its ctx. It is skipped on the UI thread, in a thread that holds the
// GIL (the loop may need it to catch up) and while no loop runs. From a Go
// finalizer (whose one goroutine every other finalizer waits behind) or a
// cleanup, Invoke from a goroutine of its own.
func Invoke(fn func()) {
	if fn == nil {
		return
	}
	if backlog.n.Load() > PaceAbove {
		pace(nil)
	}
	enqueue(fn)
}

// enqueue is Invoke without the pacing, for duet's own posts, which must
// not wait on a flood: the release queue's drain (posted from a goroutine
// Go's runtime runs cleanups on), PostUI's work and the signal handling's
// (the goroutine that hands every signal on).
func enqueue(fn func()) {
	queue.mu.Lock()
	first := len(queue.items) == 0
	queue.items = append(queue.items, fn)
	backlog.queued.Add(1)
	if backlog.n.Add(1) == 1 {
		// An idle loop is not a stuck one: it is given stallAfter from
		// when work came, not from the last it ran (a burst into a loop
		// idle for a while was never paced, and queued tens of
		// thousands before the loop woke).
		backlog.lastRun.Store(int64(time.Since(epoch)))
	}
	if first {
		// Under the lock: an Invoke that finds the queue not empty wakes
		// nobody, and the loop must not run other sources first because
		// the one that found it empty was descheduled before its wake-up
		// (the release queue's drain, so, let a redraw-priority idle run
		// ahead of a later Invoke).
		capi.LoopSetup()
		capi.LoopPost()
	}
	queue.mu.Unlock()
}

// PaceAbove, PaceFor and PaceCap bound a flood of Invokes (see Invoke):
// the backlog past which senders wait (about a millisecond of small
// Invokes), the longest an Invoke is held back below PaceCap, and the
// backlog past which senders wait for the loop's progress.
const (
	PaceAbove = 2048
	PaceFor   = time.Millisecond
	PaceCap   = 16 * PaceAbove
)

// backlog counts the Invokes queued and not yet run, across the queue and
// the dispatch's carry; caughtUp is closed (and replaced) each time the
// running loop brings it down to half of PaceAbove.
var backlog struct {
	n        atomic.Int64
	caughtUp atomic.Pointer[chan struct{}]
	paced    atomic.Int64 // Invokes that waited (forensics' Loop.Paced)
	// queued and done count every Invoke queued and run since the process
	// began: the difference between a sender's queued and done is how many
	// queued before it are left.
	queued, done atomic.Int64
	// gap is the loop's recent time from one Invoke's end to the next's
	// while a backlog waits (ns, a moving average): how long a sender at
	// PaceCap waits without progress before it takes the loop for held up.
	// A time in which a sender took the loop for held up and that ended
	// soon after the sender went on is left out: the loop waited for the
	// sender (a lock), and when that wait fed the average the next wait
	// was longer, until each send held the UI thread for the stall mark (a
	// sender holding a lock for each of 120 sends waited 1 ms at first,
	// 20 ms from the 90th on). One that ended later was the loop's own
	// slowness (an Invoke waiting for the GIL or I/O), and counts: that is
	// what keeps a loop whose Invokes wait at the cap. On a loaded machine,
	// where the two threads wait for a CPU, "soon" fails and a lock-holding
	// sender's waits grow again, up to the stall mark (see the issue notes:
	// counting only the time after the give-up, and letting one sender on
	// per hold, each broke something worse).
	gap atomic.Int64
	// heldUp is the lastRun of the time in which a sender at PaceCap last
	// took the loop for held up, and heldUpAt when it did (time since
	// epoch): ran leaves that time out of gap if it ended within
	// senderSoon of heldUpAt.
	heldUp, heldUpAt atomic.Int64
	// lastRun is when the loop last finished an Invoke (or began to run,
	// or had work queued while it had none), as time since epoch. A loop
	// that has finished none for stallAfter and whose thread waits (for a
	// lock the sender may hold, say) is stuck: waiting for it would only
	// slow the sender, a PaceFor for each Invoke, and hold the lock, so
	// nobody waits, below PaceCap, until it runs one again. A loop merely
	// slow (each Invoke longer than PaceFor), or whose thread runs or waits
	// for a CPU, still paces its senders: taking a loop starved of the CPU
	// on a loaded machine for stuck let its senders flood it (a backlog of
	// 19 756 Invokes of 1.5 ms where the pacing keeps 2048).
	lastRun atomic.Int64
}

// stallAfter: see backlog.lastRun. Short: a sender waiting on a stuck loop
// may hold a lock the loop wants (a model under a mutex), and every PaceFor
// it waits holds the UI thread too (100 ms froze it for as long).
const stallAfter = 20 * time.Millisecond

var epoch = time.Now()

func init() {
	ch := make(chan struct{})
	backlog.caughtUp.Store(&ch)
}

// sinceRun is the time since the loop last finished an Invoke (see
// backlog.lastRun); stuck, whether that is past the stall mark while the
// UI thread waits.
func sinceRun() time.Duration {
	return time.Duration(int64(time.Since(epoch)) - backlog.lastRun.Load())
}

func stuck() bool { return sinceRun() > stallAfter && !uiThreadRuns() }

// pace holds a sender while a flood's backlog is deep (see Invoke); false
// when done was closed first.
func pace(done <-chan struct{}) bool {
	if !state.running.Load() || IsMain() || capi.Attached() {
		return true
	}
	if backlog.n.Load() > PaceCap {
		return paceAtCap(done)
	}
	if stuck() {
		return true
	}
	ch := *backlog.caughtUp.Load()
	if backlog.n.Load() <= PaceAbove/2 { // caught up meanwhile, its signal maybe missed
		return true
	}
	backlog.paced.Add(1)
	t := time.NewTimer(PaceFor)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-done:
		return false
	}
	return true
}

// paceAtCap holds a sender past PaceCap until at most PaceCap of the
// Invokes queued before its own are left, for as long as the loop keeps
// its pace: its thread runs (or is ready to), or it waits but has finished
// an Invoke within twice its recent time between two, at least PaceFor (a
// loop held up, by a lock the sender holds say, is waited for that long,
// not for the stall mark). False when done was closed first. Waking each
// PaceFor to look is cheap beside a flood this deep.
func paceAtCap(done <-chan struct{}) bool {
	backlog.paced.Add(1)
	target := backlog.queued.Load() - PaceCap
	held := min(max(2*time.Duration(backlog.gap.Load()), PaceFor), stallAfter)
	t := time.NewTimer(PaceFor)
	defer t.Stop()
	for {
		select {
		case <-*backlog.caughtUp.Load():
			return true
		case <-done:
			return false
		case <-t.C:
		}
		if backlog.done.Load() >= target || !state.running.Load() {
			return true
		}
		last, now := backlog.lastRun.Load(), int64(time.Since(epoch))
		if time.Duration(now-last) >= held && !uiThreadRuns() {
			backlog.heldUpAt.Store(now)
			backlog.heldUp.Store(last)
			return true
		}
		t.Reset(PaceFor)
	}
}

// senderSoon: a time in which a sender took the loop for held up, ended
// this soon after the sender went on, was the loop waiting for the sender
// (see backlog.gap). A lock handed over takes microseconds; an Invoke
// that waits for the GIL or I/O ends later.
const senderSoon = PaceFor / 2

// uiThreadRuns reports whether the UI (main) thread is running or ready
// to run, rather than waiting (for a lock, the GIL, I/O, a timer): a loop
// that computes is slow, not held up by a sender, and waiting for it holds
// up nothing. Where the kernel does not say (no /proc), false: the loop is
// judged by time alone.
func uiThreadRuns() bool {
	// The UI thread is the main thread, whose thread id is the process id
	// (looked up each time: a forked child has its own). Only the head of
	// the line is read: "tid (comm) S ...", comm at most 16 bytes (and it
	// may hold spaces and parentheses, hence the last one).
	var buf [128]byte
	b, ok := readProc("/proc/self/task/"+strconv.Itoa(os.Getpid())+"/stat", buf[:])
	i := bytes.LastIndexByte(b, ')')
	return ok && i >= 0 && i+2 < len(b) && b[i+2] == 'R'
}

// readProc reads the head of a /proc file into buf, without the allocation
// of os.ReadFile: the pacing and the turns read these while the loop is
// held or stuck, sometimes once per Invoke. False where it cannot be read.
func readProc(path string, buf []byte) ([]byte, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return nil, false
	}
	return buf[:n], true
}

// ran counts one Invoke run, at now (time since epoch); at the low-water
// mark it wakes the paced senders. UI thread.
func ran(now time.Duration) {
	backlog.done.Add(1)
	last := backlog.lastRun.Swap(int64(now))
	sender := backlog.heldUp.Load() == last && int64(now)-backlog.heldUpAt.Load() < int64(senderSoon)
	if gap := int64(now) - last; gap < int64(stallAfter) && backlog.n.Load() > 1 && !sender {
		avg := backlog.gap.Load()
		backlog.gap.Store(avg + (gap-avg)/8)
	}
	if backlog.n.Add(-1) == PaceAbove/2 {
		next := make(chan struct{})
		close(*backlog.caughtUp.Swap(&next))
	}
}

// InvokeWait runs fn on the loop and waits for it, returning its error (or
// a *PanicError). Called on the loop itself it runs fn at once. When ctx
// ends first, InvokeWait returns ctx's error and fn will not run if it has
// not started; one that has runs on, and an Invoke made after InvokeWait
// returned runs after it: in this loop, or, when the loop stops first, in
// the next one (or never).
func InvokeWait(ctx context.Context, fn func() error) error {
	if IsMain() {
		// Either inside the loop, or the loop is not running: waiting for
		// it on this thread could only deadlock.
		return runGuarded("eventloop.InvokeWait", fn)
	}
	var cancelled atomic.Bool
	done := make(chan error, 1)
	// Paced as Invoke is, but for no longer than ctx lasts.
	if backlog.n.Load() > PaceAbove && !pace(ctx.Done()) {
		return ctx.Err()
	}
	enqueue(func() {
		if cancelled.Load() {
			return
		}
		done <- runGuarded("eventloop.InvokeWait", fn)
	})
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		cancelled.Store(true)
		// It may have finished just now: prefer its result.
		select {
		case err := <-done:
			return err
		default:
		}
		return ctx.Err()
	}
}

// onLoop runs fn on the loop and waits for it, for internal/lifetime's
// OnUI. If the loop stops first, fn runs here instead (no loop, nothing to
// confine to), exactly once either way: a caller must not wait for a loop
// that is gone.
func onLoop(stopped <-chan struct{}, fn func()) error {
	var claimed atomic.Bool
	done := make(chan error, 1)
	run := func() { done <- runGuarded("eventloop (on the UI thread)", func() error { fn(); return nil }) }
	Invoke(func() {
		if claimed.CompareAndSwap(false, true) {
			run()
		}
	})
	select {
	case err := <-done:
		return err
	case <-stopped:
		if claimed.CompareAndSwap(false, true) {
			run()
		}
		return <-done
	}
}

// posts are the functions lifetime.PostUI queued on the running loop that
// have not run yet: what the loop still owes when it stops, and runs then.
var posts struct {
	mu   sync.Mutex
	open bool // a loop runs and will run what is posted
	left map[*post]struct{}
}

type post struct {
	fn      func()
	claimed atomic.Bool // by the loop's Invoke or by its stop, whichever comes first
}

func openPosts() {
	posts.mu.Lock()
	posts.open = true
	if posts.left == nil {
		posts.left = map[*post]struct{}{}
	}
	posts.mu.Unlock()
}

// postUI is lifetime.PostUI while the loop runs: an Invoke, in order with
// the others, that the loop's stop runs if the loop has not.
func postUI(fn func()) {
	p := &post{fn: fn}
	posts.mu.Lock()
	if !posts.open {
		posts.mu.Unlock()
		fn() // the loop has stopped: nothing to confine to
		return
	}
	posts.left[p] = struct{}{}
	posts.mu.Unlock()
	enqueue(p.run)
}

func (p *post) run() {
	if !p.claimed.CompareAndSwap(false, true) {
		return
	}
	posts.mu.Lock()
	delete(posts.left, p)
	posts.mu.Unlock()
	p.fn()
}

// closePosts runs, on the UI thread as the loop stops, what was posted and
// has not run: nothing is left queued for a loop that may never come.
func closePosts() {
	posts.mu.Lock()
	posts.open = false
	left := make([]*post, 0, len(posts.left))
	for p := range posts.left {
		left = append(left, p)
	}
	posts.mu.Unlock()
	for _, p := range left {
		if err := runGuarded("eventloop (on the UI thread)", func() error { p.run(); return nil }); err != nil {
			reportError("", err)
		}
	}
}

var loopStats struct{ dispatches, timerRuns atomic.Int64 }

func init() {
	diag.LoopCounts.Set(func() diag.LoopStats {
		return diag.LoopStats{Dispatches: loopStats.dispatches.Load(), TimerRuns: loopStats.timerRuns.Load(), Collections: gcSteps.Load(),
			Queued: backlog.n.Load(), Paced: backlog.paced.Load()}
	})
}

// carry is the part of a batch that a dispatch left for the next turn: it
// runs before anything queued since. UI thread only.
var carry struct {
	items []func()
	next  int
}

// batchBudget bounds one dispatch: a flood of Invokes runs in turns of about
// this long (one item may take longer: the clock is read after each), with
// the loop's other sources (input, timers, redraw: see internal/capi/loop.c)
// served between two turns. Neither all at once (a
// backlog of 100 000 would keep the UI thread for a tenth of a second) nor
// one per wake-up (each turn of the loop costs more than a small Invoke).
//
// When the other sources keep the loop busy too (a timer slower than its
// interval is always due), they hold a backlog back past its bounded wait
// (see internal/capi/loop.c), and the next turn gets as long as they held
// it, up to maxBatchBudget: the two share the thread about evenly. With
// 2 ms turns the Invokes got a tenth of it, and what they carry (window
// teardown, the releases of gotk4's references, a Collect) fell behind
// for good, its garbage with it.
//
// On a loaded machine the others' runs stretch in time (the UI thread
// waits for a CPU in them), and a turn bounded by time alone got a smaller
// share of the thread there than on an idle machine: beside a timer always
// due, Invokes that kept up on an idle machine fell behind for good. So a
// turn after such a hold runs on past its time by as long as its thread
// waited for a CPU in it (the kernel's count, /proc/thread-self/schedstat),
// up to maxStretch times its time. Not by the CPU time the others had: a
// turn of Invokes that wait (I/O, a sleep) never reached it, and ran to
// the bound beside a timer that sleeps (32 ms a turn where it had 8).
const (
	batchBudget    = 2 * time.Millisecond
	maxBatchBudget = 8 * time.Millisecond
	maxStretch     = 4
)

// turn says when a dispatch's turn is over. Everything but a turn after a
// hold (heldBack > 0) reads the clock only, once per Invoke; one after a
// hold reads the kernel's count once at its start and, past its time, at
// most every stretchLook.
type turn struct {
	began     time.Time
	budget    time.Duration // its time
	stretched time.Duration // the most it may take (budget: no stretch)
	waited0   time.Duration // its thread's time waiting for a CPU when it began
	looked    time.Duration // when past its time it last looked (since began)
	waited    time.Duration // what it saw then
}

const stretchLook = 500 * time.Microsecond

func newTurn(began time.Time, heldBack time.Duration) turn {
	t := turn{began: began, budget: min(max(heldBack, batchBudget), maxBatchBudget)}
	t.stretched = t.budget
	if heldBack > 0 {
		if w, ok := cpuWait(); ok {
			t.stretched, t.waited0 = maxStretch*t.budget, w
		}
	}
	return t
}

func (t *turn) over(now time.Time) bool {
	took := now.Sub(t.began)
	switch {
	case took <= t.budget:
		return false
	case took > t.stretched:
		return true
	}
	if t.looked == 0 || took-t.looked >= stretchLook {
		w, ok := cpuWait()
		if !ok {
			return true
		}
		t.looked, t.waited = took, w-t.waited0
	}
	return took > t.budget+t.waited
}

// cpuWait is the calling thread's time spent waiting for a CPU (ready to
// run, not running) since it began, from /proc/thread-self/schedstat
// ("run_ns wait_ns slices"); false where the kernel does not say.
func cpuWait() (time.Duration, bool) {
	var buf [64]byte
	b, ok := readProc("/proc/thread-self/schedstat", buf[:])
	if !ok {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	w, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(w), true
}

// dispatch runs on the loop (from the invoke source): queued work, in order,
// for about batchBudget. It says whether work is left for the next turn.
//
// It may be re-entered: a task that an async settle resumed, inside this
// dispatch, may run a nested main loop (a modal wait), and the invoke
// source recurses there (internal/capi/loop.c, capi.LoopAllowNested), so
// that Invokes, the one ending the wait among them, run inside it. Every
// level goes on with the one carry, in order: after each function the
// batch is read afresh, since a nested level may have finished it and
// taken the next.
func dispatch(heldBack time.Duration) (more bool) {
	loopStats.dispatches.Add(1)
	t := newTurn(time.Now(), heldBack)
	for {
		if carry.next == len(carry.items) {
			queue.mu.Lock()
			if len(queue.items) == 0 {
				// Checked before the swap: swapping an empty queue would
				// drop the spare array just put back, and the next Invoke
				// would allocate a new one.
				queue.mu.Unlock()
				return false
			}
			batch := queue.items
			queue.items, queue.spare = queue.spare[:0], nil // never share an array between the two
			queue.mu.Unlock()
			carry.items, carry.next = batch, 0
		}
		fn := carry.items[carry.next]
		carry.items[carry.next] = nil
		carry.next++
		err := runGuarded("eventloop.Invoke", func() error { fn(); return nil })
		now := time.Now()
		ran(now.Sub(epoch))
		if err != nil {
			reportError("", err)
		}
		if carry.next < len(carry.items) {
			if t.over(now) {
				return true
			}
			continue
		}
		if items := carry.items; items != nil { // nil: a nested level finished it
			carry.items, carry.next = nil, 0
			if cap(items) <= 1024 {
				queue.mu.Lock()
				queue.spare = items[:0]
				queue.mu.Unlock()
			}
		}
		if t.over(now) {
			queue.mu.Lock()
			more = len(queue.items) > 0
			queue.mu.Unlock()
			return more
		}
	}
}

func runGuarded(where string, fn func() error) (err error) {
	returned := false
	defer func() {
		if p := recover(); p != nil {
			err = &pygi.PanicError{Where: where, Value: p, Stack: string(debug.Stack())}
			return
		}
		if !returned && IsMain() {
			// runtime.Goexit (t.FailNow, require.*) on the UI thread would
			// unwind the loop itself and leave the process hung: stop loudly.
			fmt.Fprintf(os.Stderr, "duet: fatal: runtime.Goexit (t.FailNow, require.*?) in %s on the UI thread: "+
				"it would unwind the loop itself, so the process ends here "+
				"(in tests, use the testing.TB that looptest.Do passes to its function)\n%s\n", where, debug.Stack())
			os.Exit(2)
		}
	}()
	err = fn()
	returned = true
	return err
}

var panics struct {
	mu   sync.Mutex
	subs map[int]func(*pygi.PanicError)
	next int
}

// OnPanic registers fn to receive the panics recovered from Invoke work
// and timers, instead of their being printed with their stacks to stderr
// (the default while nobody is registered). It returns a function that
// removes fn.
func OnPanic(fn func(*pygi.PanicError)) (remove func()) {
	panics.mu.Lock()
	defer panics.mu.Unlock()
	if panics.subs == nil {
		panics.subs = map[int]func(*pygi.PanicError){}
	}
	id := panics.next
	panics.next++
	panics.subs[id] = fn
	return func() {
		panics.mu.Lock()
		delete(panics.subs, id)
		panics.mu.Unlock()
	}
}

// notifyPanic hands pe to a subscriber; a subscriber that panics itself is
// reported with both stacks, and the loop goes on.
func notifyPanic(f func(*pygi.PanicError), pe *pygi.PanicError) {
	defer func() {
		if p := recover(); p != nil {
			report.Print("eventloop: an OnPanic subscriber panicked", &pygi.PanicError{Where: "an OnPanic subscriber", Value: p, Stack: string(debug.Stack())})
			report.Print("eventloop: the panic it was handed", pe)
		}
	}()
	f(pe)
}

// reportError prints err with what its chain knows of where it happened
// (see internal/report), unless it is a panic that the handler takes.
func reportError(prefix string, err error) {
	var pe *pygi.PanicError
	if errors.As(err, &pe) {
		panics.mu.Lock()
		subs := make([]func(*pygi.PanicError), 0, len(panics.subs))
		for _, f := range panics.subs {
			subs = append(subs, f)
		}
		panics.mu.Unlock()
		for _, f := range subs {
			notifyPanic(f, pe)
		}
		if len(subs) > 0 {
			return
		}
	}
	report.Print(prefix, err)
}
