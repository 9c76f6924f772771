package app_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/pygi"
)

func init() {
	// app.Main with an activate function whose Python call raised.
	children["activate-error"] = func() int {
		os.Args = prog // Main hands the command line to GApplication
		return app.Main(app.Options{ID: "org.duet.ActivateError", NonUnique: true}, func(a *app.App) error {
			g, err := pygi.NewGlobals()
			if err != nil {
				return err
			}
			if err := pygi.Exec("def mean(xs):\n    return sum(xs) / len(xs)\n", g); err != nil {
				return err
			}
			if _, err := pygi.Eval("mean([])", g); err != nil {
				return fmt.Errorf("computing: %w", err)
			}
			return nil
		})
	}
}

// The error an activate function returns is printed with the Python
// traceback it carries: the one line alone does not say where.
func TestActivateErrorShowsItsTraceback(t *testing.T) {
	r := runChild(t, "activate-error", nil)
	assert.Equal(t, 1, r.code, "stderr:\n%s", r.err)
	assert.Contains(t, r.err, "app: activate: computing: ZeroDivisionError: division by zero\nTraceback (most recent call last):\n")
	assert.Contains(t, r.err, "line 2, in mean\n")
}
