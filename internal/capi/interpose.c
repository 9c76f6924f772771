// interpose.c: the process's signal handling belongs to the Go program, so
// libpython may not change it. CPython changes it in several places: each
// signal.signal (PyOS_setsig: SIG_DFL, SIG_IGN or its own handler, for a
// moment or for good), its finalisation (_PySignal_Fini sets SIG_DFL for
// every signal that had a Python handler, while finalisation still runs),
// faulthandler (its own handlers and an alternate signal stack on the
// calling thread, freed at finalisation while that thread still uses it),
// and signal.siginterrupt. A signal that arrives while such a change is in
// place takes the default action and ends the program, whatever the
// program subscribed to.
//
// So this file defines sigaction, sigaltstack and siginterrupt for the
// executable (the dynamic linker resolves libpython's calls to them here
// first). A call whose return address lies in libpython's code and that
// would change something changes nothing: what CPython asked for is
// recorded (duet_python_action: signals.c hands faulthandler's handlers on
// from there) and CPython is told what is really in place. Every other
// call, from Go's runtime, GLib, C extensions or duet, goes to libc
// untouched. Reading calls always go to libc.
//
// SIGPIPE and SIGXFSZ: python3 ignores both, so that a write to a closed
// pipe, or past the file size limit, fails with an error. Go handles them
// on its own threads that way, but on a thread it does not run (Python's
// threads, GLib's) it ends the process with the disposition the process
// started with. Before Go's runtime starts (a constructor runs first), a
// default disposition of those two is made SIG_IGN, which is what Go then
// falls back to on such threads; Go installs its own handlers over it as
// always, so the process's dispositions, and what child processes inherit,
// are as without duet, and Go's own writes to a closed stdout still end the
// program.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "duet.h"

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static int (*real_sigaltstack)(const stack_t *, stack_t *);
static int (*real_siginterrupt)(int, int);
static uintptr_t py_lo, py_hi; // libpython's executable segment
static pid_t our_pid;          // the process's; another in a forked child

static struct sigaction py_action[NSIG]; // what CPython last asked for
static volatile int py_asked[NSIG];

// find_libpython finds libpython's executable segment by the library's
// name. Not by the address of one of its functions: in an executable built
// without PIE that address is the executable's own PLT entry, and the
// executable's code (Go's runtime among it) would pass for libpython's.
// Never the executable itself (its name is empty).
static int find_libpython(struct dl_phdr_info *info, size_t size, void *data) {
	const char *name = info->dlpi_name;
	if (!name || !name[0]) return 0;
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	if (strncmp(base, "libpython3", 10) != 0) return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
		py_lo = info->dlpi_addr + ph->p_vaddr;
		py_hi = py_lo + ph->p_memsz;
		return 1;
	}
	return 0;
}

// resolve finds libc's functions. The constructor does it, before anything
// can call them from a signal handler; a library initialised before this
// executable's constructors (a sanitizer's runtime) may call first, and
// gets them resolved then.
static void resolve(void) {
	if (!real_sigaction)
		real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
	if (!real_sigaltstack) real_sigaltstack = (int (*)(const stack_t *, stack_t *))dlsym(RTLD_NEXT, "sigaltstack");
	if (!real_siginterrupt) real_siginterrupt = (int (*)(int, int))dlsym(RTLD_NEXT, "siginterrupt");
}

// atfork_child runs in every child fork() makes, at once: Go's handlers
// cannot run there (no Go runtime runs in a forked child), so a signal
// they handled takes its default action, or runs CPython's handler when
// Python code handles it; ignored signals stay ignored. A child that runs
// Python code gets the rest of Python's view next (duet_child_signals).
// Signals are blocked across the fork, so that one sent to the child the
// moment it exists waits until its dispositions are right (else Go's
// handler, with no Go runtime behind it, would swallow it).
static __thread sigset_t fork_mask;

static void atfork_prepare(void) {
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &fork_mask);
}

static void atfork_parent(void) { pthread_sigmask(SIG_SETMASK, &fork_mask, NULL); }

static void atfork_child_dispositions(void);

static void atfork_child(void) {
	atfork_child_dispositions();
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

static void atfork_child_dispositions(void) {
	if (!real_sigaction) return;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP) continue;
		struct sigaction cur;
		if (real_sigaction(sig, NULL, &cur) != 0) continue;
		if (!(cur.sa_flags & SA_SIGINFO) && (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN)) continue;
		struct sigaction to;
		if (__atomic_load_n(&py_asked[sig], __ATOMIC_ACQUIRE) &&
		    ((py_action[sig].sa_flags & SA_SIGINFO) ||
		     (py_action[sig].sa_handler != SIG_DFL && py_action[sig].sa_handler != SIG_IGN))) {
			to = py_action[sig];
		} else {
			memset(&to, 0, sizeof to);
			to.sa_handler = SIG_DFL;
			sigemptyset(&to.sa_mask);
		}
		real_sigaction(sig, &to, NULL);
	}
}

__attribute__((constructor)) static void interpose_init(void) {
	resolve();
	our_pid = getpid();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	dl_iterate_phdr(find_libpython, NULL);
	if (!real_sigaction) return;
	static const int quiet[] = {SIGPIPE, SIGXFSZ};
	for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++) {
		struct sigaction cur;
		if (real_sigaction(quiet[i], NULL, &cur) != 0) continue;
		if ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) continue; // inherited: kept
		struct sigaction ign;
		memset(&ign, 0, sizeof ign);
		ign.sa_handler = SIG_IGN;
		sigemptyset(&ign.sa_mask);
		real_sigaction(quiet[i], &ign, NULL);
	}
}

// duet_forked_child: this is a child process forked from the Go program
// (os.fork, subprocess, multiprocessing): no Go runtime runs here, and it
// is a Python process now, whose signals are Python's. No write: a vfork
// child shares the parent's memory.
int duet_forked_child(void) { return our_pid != 0 && getpid() != our_pid; }

static int from_python(void *ra) {
	uintptr_t a = (uintptr_t)ra;
	return py_hi != 0 && a >= py_lo && a < py_hi && !duet_forked_child();
}

// duet_child_signals gives a forked child the dispositions Python asked
// for (CPython's handlers, SIG_IGN for SIGPIPE...), and the default for
// every signal Go handled: Go's handlers cannot run in the child.
void duet_child_signals(void) {
	if (!duet_forked_child() || !real_sigaction) return;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP) continue;
		struct sigaction cur;
		if (real_sigaction(sig, NULL, &cur) != 0) continue;
		if (__atomic_load_n(&py_asked[sig], __ATOMIC_ACQUIRE)) {
			real_sigaction(sig, &py_action[sig], NULL);
		} else if ((cur.sa_flags & SA_SIGINFO) || (cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN)) {
			struct sigaction dfl;
			memset(&dfl, 0, sizeof dfl);
			dfl.sa_handler = SIG_DFL;
			sigemptyset(&dfl.sa_mask);
			real_sigaction(sig, &dfl, NULL);
		}
	}
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
	if (__builtin_expect(!real_sigaction, 0)) resolve();
	if (act && sig > 0 && sig < NSIG && from_python(__builtin_return_address(0))) {
		int rc = old ? real_sigaction(sig, NULL, old) : 0;
		py_action[sig] = *act;
		__atomic_store_n(&py_asked[sig], 1, __ATOMIC_RELEASE);
		return rc;
	}
	return real_sigaction(sig, act, old);
}

int sigaltstack(const stack_t *ss, stack_t *old) {
	if (__builtin_expect(!real_sigaltstack, 0)) resolve();
	if (ss && from_python(__builtin_return_address(0))) return real_sigaltstack(NULL, old);
	return real_sigaltstack(ss, old);
}

int siginterrupt(int sig, int flag) {
	if (__builtin_expect(!real_siginterrupt, 0)) resolve();
	if (from_python(__builtin_return_address(0))) return 0;
	return real_siginterrupt(sig, flag);
}

// duet_python_action copies what CPython last asked for sig into out; 0
// when it never asked (or libpython was not found: then nothing is
// interposed, and signals.c falls back to putting actions back by hand).
int duet_python_action(int sig, struct sigaction *out) {
	if (sig <= 0 || sig >= NSIG || !__atomic_load_n(&py_asked[sig], __ATOMIC_ACQUIRE)) return 0;
	*out = py_action[sig];
	return 1;
}

int duet_interposing(void) { return py_hi != 0 && real_sigaction != NULL; }
