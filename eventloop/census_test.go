package eventloop_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/pygi"
)

// What a census of an app that never imports asyncio shows: nothing of
// asyncio's (the README promises "nothing until the program imports
// asyncio"), and only callbacks whose names say what they are for. Run in
// a child: the other tests of this package import asyncio.

// census prints the live callbacks and whether asyncio was imported, one
// line each, prefixed with phase.
func census(phase string) error {
	in, err := pygi.Eval("'asyncio' in __import__('sys').modules", nil)
	if err != nil {
		return err
	}
	imported, err := pygi.As[bool](in)
	if err != nil {
		return err
	}
	fmt.Printf("%s\tasyncio imported\t%v\n", phase, imported)
	mods, err := pygi.Eval("sorted(m for m in __import__('sys').modules if 'asyncio' in m)", nil)
	if err != nil {
		return err
	}
	names, err := pygi.As[[]string](mods)
	if err != nil {
		return err
	}
	fmt.Printf("%s\tasyncio modules\t%s\n", phase, strings.Join(names, " "))
	for _, l := range diag.CallbackCensus.Read() {
		fmt.Printf("%s\tcallback\t%s\t%s\t%d\n", phase, l.Name, l.Site, l.Count)
	}
	return nil
}

// exercise uses what an app without asyncio uses of eventloop: timers,
// log routing, Python exceptions routed to Go, a Go error raised into
// Python, a collection.
func exercise() error {
	remove := eventloop.OnPythonException(func(*pygi.Error) {})
	defer remove()
	stop, err := eventloop.RouteLogs(slog.DiscardHandler)
	if err != nil {
		return err
	}
	defer stop()
	fail, err := callbacks.New(func() error { return errors.New("from Go") }, callbacks.Name("fail"))
	if err != nil {
		return err
	}
	defer fail.Close()
	if _, err := fail.Call(); err == nil {
		return errors.New("the failing callback did not fail")
	}
	if err := pygi.Exec("import warnings\nwarnings.warn('routed')\n", nil); err != nil {
		return err
	}
	fired := make(chan struct{})
	eventloop.After(time.Millisecond, func() { close(fired) })
	go func() {
		<-fired
		eventloop.Invoke(func() {})
	}()
	return eventloop.Collect()
}

func init() {
	lifetimeChildren["census-without-asyncio"] = func() error {
		for run := 1; run <= 2; run++ {
			var err error
			eventloop.Invoke(func() {
				defer eventloop.Quit()
				if err = exercise(); err == nil {
					err = census(fmt.Sprintf("run %d", run))
				}
			})
			if rerr := eventloop.Run(context.Background()); rerr != nil {
				return rerr
			}
			if err != nil {
				return err
			}
		}
		// Then asyncio: its callbacks, once it is in use, are named too.
		coro, err := pygi.Eval("(lambda: __import__('asyncio').sleep(0))", nil)
		if err != nil {
			return err
		}
		var awaitErr error
		go func() {
			defer eventloop.Quit()
			for !eventloop.Running() {
				time.Sleep(time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, awaitErr = eventloop.Await(ctx, coro); awaitErr == nil {
				awaitErr = eventloop.InvokeWait(ctx, func() error { return census("asyncio") })
			}
		}()
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		if awaitErr != nil {
			return awaitErr
		}
		return pygi.Finalize(context.Background())
	}
}

// unnamed matches the names callbacks derives for a func literal (funcN,
// gowrapN, callbackN): a callback duet makes for itself names itself.
var unnamed = regexp.MustCompile(`^callback\d*$|(^|_)(func|gowrap)\d+(_|$)`)

// duetSite tells a site in duet's own code (not a test's).
func duetSite(site string) bool {
	for _, dir := range []string{"pygi/", "callbacks/", "eventloop/", "widgets/", "app/", "forensics/", "lifetime/", "pysrc/", "bridge/", "capi/"} {
		if strings.HasPrefix(site, dir) && !strings.Contains(site, "_test.go") {
			return true
		}
	}
	return false
}

func TestNothingOfAsyncioUntilImported(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "census-without-asyncio")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	phases := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 3 {
			continue
		}
		phase := f[0]
		phases[phase] = true
		switch f[1] {
		case "asyncio imported":
			assert.Equal(t, phase == "asyncio", f[2] == "true", "%s: asyncio in sys.modules: %s", phase, f[2])
		case "asyncio modules":
			if phase != "asyncio" {
				assert.Empty(t, f[2], "%s: modules of asyncio's loaded before the program imports asyncio", phase)
			} else {
				assert.Contains(t, f[2], "duet_asyncio")
			}
		case "callback":
			require.Len(t, f, 5, line)
			name, site := f[2], f[3]
			if phase != "asyncio" {
				assert.NotContains(t, strings.ToLower(name+" "+site), "asyncio",
					"%s: a callback of asyncio's is alive before the program imports asyncio: %s", phase, line)
			}
			if duetSite(site) {
				assert.NotRegexp(t, unnamed, name, "%s: duet made a callback without a name (callbacks.Name): %s", phase, line)
			}
		}
	}
	assert.Len(t, phases, 3, "every phase reported:\n%s", out)
}
