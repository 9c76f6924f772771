package callbacks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/duet-gtk/duet/callbacks"
)

// Async checks the func's shape when it is made, not when Python awaits it.
func TestAsyncRefusesWhatItCannotAwait(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   any
		want string
	}{
		{"nil", nil, "non-nil func"},
		{"not a func", 42, "non-nil func"},
		{"no context", func(n int) int { return n }, "first parameter is a context.Context"},
		{"context not first", func(n int, ctx context.Context) int { return n }, "first parameter is a context.Context"},
		{"three results", func(ctx context.Context) (int, int, error) { return 0, 0, nil }, "results (T, error), error, T or none"},
		{"error first", func(ctx context.Context) (error, int) { return nil, 0 }, "results (T, error), error, T or none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := callbacks.Async(tc.fn)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	for _, fn := range []any{
		func(ctx context.Context) {},
		func(ctx context.Context) error { return nil },
		func(ctx context.Context, s string) string { return s },
		func(ctx context.Context, a, b int) (int, error) { return a + b, nil },
		func(ctx context.Context, xs ...int) int { return len(xs) },
	} {
		f, err := callbacks.Async(fn)
		if assert.NoError(t, err) {
			f.Close()
		}
	}
}
