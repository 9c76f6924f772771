// Package programpoll stands, in tests, for a program that sets a poll
// function of its own on GLib's default main context: one that counts its
// calls and calls the poll the context had when it was installed.
package programpoll

/*
#cgo pkg-config: glib-2.0
#include <glib.h>
static GPollFunc saved;
static gint calls;
static gint program_poll(GPollFD *fds, guint n, gint timeout) {
	g_atomic_int_inc(&calls);
	return saved(fds, n, timeout);
}
static void install(void) {
	GMainContext *ctx = g_main_context_default();
	saved = g_main_context_get_poll_func(ctx);
	g_main_context_set_poll_func(ctx, program_poll);
}
static int count(void) { return g_atomic_int_get(&calls); }
*/
import "C"

// Install puts the program's poll around the context's current one. Call
// it on the thread that owns the default context.
func Install() { C.install() }

// Calls is how often the program's poll ran.
func Calls() int { return int(C.count()) }
