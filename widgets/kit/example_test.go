package kit_test

import (
	"context"
	"fmt"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/widgets/kit"
)

// A chart fed from a goroutine: Push batches the values into one Python
// call per loop turn; the generated Points reads them back on the loop.
func ExampleNewLineChart() {
	var chart *kit.LineChart
	eventloop.InvokeWait(context.Background(), func() (err error) {
		chart, err = kit.NewLineChart("load", "%", 3)
		return err
	})
	done := make(chan struct{})
	go func() {
		for _, v := range []float64{10, 20, 30, 40} {
			chart.Push("cpu", v)
		}
		close(done)
	}()
	<-done
	eventloop.InvokeWait(context.Background(), func() error { return nil }) // the batch has been delivered
	eventloop.InvokeWait(context.Background(), func() error {
		pts, err := chart.Points("cpu")
		fmt.Println(pts, err)
		return chart.Close()
	})
	// Output:
	// [20 30 40] <nil>
}
