// loop.h: GLib sources for duet's event loop (loop.c). Thread-safe unless
// noted: duet_loop_post, duet_loop_quit and the timer functions may be
// called from any thread.
#ifndef DUET_LOOP_H
#define DUET_LOOP_H
#include <stdint.h>

void duet_loop_setup(void);
void duet_loop_wrap_poll(int on); // the spin around the default context's poll, while the loop runs
void duet_loop_post(void);
// UI thread: an async Go call has just started; the loop may spin briefly
// before its next poll (loop.c).
void duet_loop_expect(void);
void duet_loop_spin_stats(int *found, int *empty, int *unwoken);
int duet_multi_cpu(void);
int duet_loop_poll_wrapped(void);
// Parkers of the goroutines that start async Go calls (loop.c): the
// starter arms, then spins (1: woken; 0: gone to sleep, to be woken in Go);
// its waker's wake says 1 when the spinner took it, 0 when it sleeps.
void *duet_parker_new(void);
void duet_parker_free(void *p);
void duet_park_arm(void *p);
int duet_park_spin(void *p);
int duet_park_wake(void *p);
void duet_park_stats(int *spun, int *slept);
void *duet_loop_new(void);
void duet_loop_run(void *loop);
void duet_loop_quit(void *loop);
void duet_loop_unref(void *loop);
int duet_loop_iterate(int may_block);
int duet_loop_is_owner(void);
// Makes the calling thread the owner of the default context for good
// (see loop.c); false when another thread owns it.
int duet_loop_own_default(void);
// A GSource* the caller owns one reference to; GLib calls
// duetTimerFire(handle) at each expiry until it returns FALSE.
void *duet_timer_new(uintptr_t handle, uint64_t interval_ms);
void duet_timer_release(void *source);
// Whether what runs now (inside an invoke dispatch) may run a nested main
// loop that dispatches Invokes; returns the previous setting. UI thread.
int duet_loop_allow_nested(int on);
// GLib's log messages (loop.c): duet's writer, unless gotk4's is linked in.
int duet_log_gotk4(void);
void duet_log_install(void);
void duet_log_route(int on);
void duet_fatal_criticals(void);
#endif
