package eventloop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

// childMain runs a loop in a child process (on the main thread: TestMain's).
func childMain(name string) int {
	switch name {
	case "sigint":
		// Python busy on a goroutine while the signal arrives.
		go func() {
			for {
				r, err := pygi.Eval("sum(range(100))", nil)
				if err != nil {
					return
				}
				r.Close()
			}
		}()
		eventloop.Invoke(func() { fmt.Println("ready") })
		err := eventloop.Run(context.Background())
		var se *eventloop.SignalError
		if !errors.As(err, &se) {
			fmt.Fprintln(os.Stderr, "want a SignalError, got", err)
			return 1
		}
		fmt.Println("quit on", se.Signal)
		if err := pygi.Finalize(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	if fn, ok := lifetimeChildren[name]; ok {
		if err := fn(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		fmt.Println("ok")
		return 0
	}
	return 2
}

func TestSIGINTQuitsGracefully(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			exe, err := os.Executable()
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := testutil.Command(ctx, exe, "-test.run=^$")
			cmd.Env = testutil.ChildEnv(t, "EVENTLOOP_CHILD=sigint")
			var out, errb strings.Builder
			pr, pw, err := os.Pipe()
			require.NoError(t, err)
			cmd.Stdout, cmd.Stderr = pw, &errb
			require.NoError(t, cmd.Start())
			pw.Close()
			buf := make([]byte, 6)
			_, err = pr.Read(buf)
			require.NoError(t, err)
			require.Equal(t, "ready\n", string(buf))
			time.Sleep(50 * time.Millisecond) // let the Python goroutine get going
			require.NoError(t, cmd.Process.Signal(sig))
			rest := make([]byte, 256)
			n, _ := pr.Read(rest)
			out.Write(rest[:n])
			err = cmd.Wait()
			require.NoError(t, ctx.Err(), "child hung")
			require.NoError(t, err, "exit status; stderr:\n%s", errb.String())
			assert.Contains(t, out.String(), "quit on "+sig.String())
			assert.Empty(t, errb.String())
		})
	}
}
