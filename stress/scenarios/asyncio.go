package scenarios

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/stress/harness"
)

const asyncioSource = `
import asyncio
state = {"running": True, "rounds": 0}

async def work(make_async, iterated):
    # Each round: a fresh Go async func awaited (a callback made, and
    # dropped), a task cancelled in flight, a timer, a gather of several Go
    # awaits.
    loop = asyncio.get_running_loop()
    while state["running"]:
        inc = make_async()
        x = await inc(state["rounds"])
        t = asyncio.create_task(asyncio.sleep(10))
        await asyncio.sleep(0)
        t.cancel()
        try:
            await t
        except asyncio.CancelledError:
            pass
        fut = loop.create_future()
        loop.call_later(0.0005, fut.set_result, x)
        await fut
        await asyncio.gather(*(inc(i) for i in range(4)))
        del inc
        state["rounds"] += 1
        iterated()

async def echo(x):
    await asyncio.sleep(0)
    return x
`

// Asyncio runs asyncio work on the duet loop: Python awaiting Go async
// funcs made and dropped every round, tasks cancelled in flight, while a
// goroutine awaits Python coroutines, all under forced collections; at the
// end the loop's shutdown cancels what is left.
func Asyncio(env *harness.Env) error {
	// Imported before the loop starts, so that the loop loads its asyncio
	// support as it starts, before the census's mark: set-up, not growth.
	aio, err := pygi.Import("asyncio")
	if err != nil {
		return err
	}
	aio.Close()
	return runApp(env, "asyncio", func(a *app.App) (func(), error) {
		makeAsync := func() (*pygi.Object, error) {
			return env.Async(func(ctx context.Context, n int) int { return n + 1 }, "inc")
		}
		var b pygi.Block
		g := b.Globals(pygi.Kw{})
		b.Exec(asyncioSource, g)
		work, echo := b.Item(g, "work"), b.Item(g, "echo")
		if err := b.Err(); err != nil {
			return nil, err
		}
		env.Op("asyncio: start the work task")
		task, err := eventloop.StartTask(work, makeAsync, func() { env.Iter(1) })
		if err != nil {
			return nil, err
		}
		go func() {
			// The work task only ends with the loop: an earlier end is a failure.
			<-task.Done()
			if env.Ctx.Err() == nil {
				_, err := task.Wait(context.Background())
				fail(fmt.Errorf("the asyncio work task ended: %v", err))
			}
		}()
		go func() {
			for i := 0; env.Ctx.Err() == nil; i++ {
				ctx, cancel := context.WithTimeout(env.Ctx, 10*time.Second)
				r, err := eventloop.Await(ctx, echo, i)
				cancel()
				switch {
				case env.Ctx.Err() != nil:
					return
				case err != nil && !errors.Is(err, eventloop.ErrNotRunning):
					fail(fmt.Errorf("Go awaiting Python, round %d: %w", i, err))
					return
				}
				r.Close()
				if i%100 == 0 {
					env.Op("asyncio: Go awaited Python %d times", i)
				}
			}
		}()
		// The loop's end cancels the task (and whatever it awaits) if it is
		// still running; asking it to stop first lets it end its round.
		return func() { pygi.Exec("state['running'] = False", g) }, nil
	})
}
