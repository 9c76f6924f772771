// interpose.c: the process's signal handling belongs to the Go program, so
// CPython may not change it. CPython changes it in several places: each
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
// executable. A call from CPython's code changes nothing: what CPython asks
// for is recorded (duet_python_action: signals.c hands faulthandler's
// handlers on from there, and a forked child gets it), and CPython is told
// what python3 would have in place (see sigaction). Every other call, from
// Go's runtime, GLib, C extensions or the program's own C code, goes to
// libc untouched. duet's own C code calls libc through duet_os_sigaction.
//
// Which caller is CPython, by the call's return address:
//   - libpython linked statically (the default, as python3 itself is
//     built: its code runs 10-15% faster than libpython.so's position-
//     independent code): CPython's code is the executable's own. Calls
//     from it resolve here at link time (the shared libraries', GLib's
//     and the C extensions', through the dynamic linker, and never count).
//     Its callers are found before Python starts (duet_interpose_prepare)
//     in the executable's symbol table: the local functions of the four
//     CPython objects that call these (faulthandler, signalmodule,
//     pylifecycle, _posixsubprocess) and the three named ones
//     (cpython_callers).
//   - A stripped executable (go run and go test strip theirs, as does
//     -ldflags=-s) has no symbol table, only the dynamic one, which names
//     every global function (--export-dynamic) but no static one: a named
//     caller answers by its name, and a static one by its neighbours in
//     the unwind table, which lists functions object by object
//     (place_static_functions).
//   - A test checks both against every call and every function in the
//     linked executable, stripped in several ways and started as it might
//     be (internal/capi/interpose_test.go).
//   - libpython3.11.so (built with the tag duet_sharedpython): CPython's
//     code is libpython's executable segment, found by the library's name.
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
#include <errno.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "duet.h"

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static int (*real_sigaltstack)(const stack_t *, stack_t *);
static int (*real_siginterrupt)(int, int);
static uintptr_t py_lo, py_hi; // libpython.so's executable segment (a shared build)
static pid_t our_pid;          // the process's; another in a forked child

static struct sigaction py_action[NSIG]; // what CPython last asked for
static volatile int py_asked[NSIG];
static struct sigaction start_action[NSIG]; // the process's, before Go's runtime started

// is_handler: a sets a function, not SIG_DFL or SIG_IGN.
static int is_handler(const struct sigaction *a) {
	return (a->sa_flags & SA_SIGINFO) || (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN);
}

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

// ---- CPython's callers in a static build --------------------------------------

// Published once by duet_interpose_prepare, before Python starts (so before
// CPython can call), with a release store of static_mode; read by any
// thread after, a signal handler among them, so never freed.
struct code_range {
	uintptr_t lo, hi;
	int cpython; // its calls are CPython's
	int label;   // named as CPython names its functions (the unwind table's neighbours)
};
static struct code_range *ranges; // sorted by lo
static size_t nranges;
static uintptr_t exe_lo, exe_hi;   // the code of the object duet and CPython are linked into
static uintptr_t exe_bias;         // its load address against its link-time one (PIE)
static const ElfW(Dyn) *exe_dyn;   // its dynamic section, in memory
static const uint8_t *exe_ehhdr;   // its .eh_frame_hdr, in memory
static uintptr_t exe_ehseg_hi;     // the end of the segment that holds it
static char exe_path[4096];        // its file
enum { STATIC_NONE, STATIC_SYMBOLS, STATIC_DYNAMIC };
static int static_mode;

// find_own finds the ELF object whose code holds this function, which is
// the one libpython's archive was linked into along with duet's C: the
// program's executable (by its address, not by dl_iterate_phdr's order).
static int find_own(struct dl_phdr_info *info, size_t size, void *data) {
	uintptr_t self = (uintptr_t)data, lo = 0, hi = 0, eh = 0, ehhi = 0;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		if (ph->p_type == PT_GNU_EH_FRAME) eh = info->dlpi_addr + ph->p_vaddr;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD) continue;
		uintptr_t l = info->dlpi_addr + ph->p_vaddr;
		if (eh >= l && eh < l + ph->p_memsz) ehhi = l + ph->p_memsz;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
		uintptr_t l = info->dlpi_addr + ph->p_vaddr, h = l + ph->p_memsz;
		if (!lo || l < lo) lo = l;
		if (h > hi) hi = h;
	}
	if (self < lo || self >= hi) return 0;
	const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
	if (strlen(name) < sizeof exe_path) strcpy(exe_path, name);
	exe_lo = lo;
	exe_hi = hi;
	exe_bias = info->dlpi_addr;
	exe_dyn = dyn;
	exe_ehhdr = ehhi ? (const uint8_t *)eh : NULL;
	exe_ehseg_hi = ehhi;
	return 1;
}

// The CPython objects whose functions call sigaction, sigaltstack or
// siginterrupt (a test checks the list against every call in the linked
// executable), by the archive member's whole name: a cgo file of the
// program's (FILE faulthandler.cgo2.c) or a C file named so is not one.
// A table that names them otherwise (a CPython built from source) does not
// count, and the dynamic table is read instead.
static const char *const cpython_files[] = {"faulthandler.o", "signalmodule.o", "pylifecycle.o", "_posixsubprocess.o", NULL};

// one_of says whether the n bytes at s are one of list's names (NULL-ended).
static int one_of(const char *s, size_t n, const char *const *list) {
	for (; *list; list++)
		if (strlen(*list) == n && memcmp(s, *list, n) == 0) return 1;
	return 0;
}

// cpython_file: 1 for one of those, 2 for the empty name that ld puts
// before the hidden symbols it made local (CPython's _PyFaulthandler_Fini
// among them), 0 for any other file.
static int cpython_file(const char *name, size_t max) {
	size_t n = strnlen(name, max);
	if (n == 0) return 2;
	const char *base = memrchr(name, '/', n);
	base = base ? base + 1 : name;
	return one_of(base, n - (size_t)(base - name), cpython_files);
}

// CPython's rule for its own global names (its build checks it): Py or _Py.
// A program's own C may use them too (an extension module linked in, a
// static inline of Python.h's): a name says which object a function is
// likely in, not whose calls it makes.
static int cpython_name(const char *name, size_t max) {
	return (max >= 2 && name[0] == 'P' && name[1] == 'y') || (max >= 3 && name[0] == '_' && name[1] == 'P' && name[2] == 'y');
}

// The named functions of the four objects that call these themselves (the
// test of the caller list keeps this list whole); the rest are local ones.
static const char *const cpython_callers[] = {"PyOS_setsig", "PyOS_getsig", "_PyFaulthandler_Fini", NULL};

static int cpython_caller(const char *name, size_t max) {
	size_t n = strnlen(name, max);
	return n < max && one_of(name, n, cpython_callers); // NUL-ended within the table
}

static int range_cmp(const void *a, const void *b) {
	uintptr_t x = ((const struct code_range *)a)->lo, y = ((const struct code_range *)b)->lo;
	return x < y ? -1 : x > y;
}

// collect reads a symbol table's functions into ranges, for mode:
//   - STATIC_SYMBOLS (the file's symbol table): CPython's functions only,
//     exactly: the local ones under the FILE symbol of one of
//     cpython_files, and every one named Py or _Py. A table that lost its
//     FILE symbols (strip -g, strip -x) cannot place CPython's static
//     functions, so it does not count.
//   - STATIC_DYNAMIC (the dynamic symbol table: go run, go test and
//     -ldflags=-s strip the other): every function, CPython's by name;
//     --export-dynamic puts every global function here, so only static
//     functions are missing, and place_static_functions adds those.
// Either way the table must be this object's: it holds this function at
// its address (a launch through ld.so makes /proc/self/exe ld.so's file).
static int collect(const ElfW(Sym) *syms, size_t nsyms, const char *strs, size_t strsz, int mode) {
	size_t cap = 0, n = 0, nfile = 0, ncpython = 0;
	int self = 0;
	struct code_range *r = NULL;
	int in_cpython_file = 0; // the local symbols after a FILE symbol are that file's
	for (size_t i = 0; i < nsyms; i++) {
		const ElfW(Sym) *s = &syms[i];
		if (s->st_name >= strsz) continue;
		const char *name = strs + s->st_name;
		size_t max = strsz - s->st_name;
		int type = ELF64_ST_TYPE(s->st_info);
		if (type == STT_FILE) {
			in_cpython_file = cpython_file(name, max);
			continue;
		}
		if (type != STT_FUNC || s->st_size == 0 || s->st_shndx == SHN_UNDEF) continue;
		uintptr_t lo = exe_bias + s->st_value;
		if (lo == (uintptr_t)duet_interpose_prepare && strncmp(name, "duet_interpose_prepare", max) == 0) self = 1;
		// CPython's calls: those of a local function of one of the four
		// objects, and of its named callers (global, or hidden and made
		// local), never of a Py-named function of the program's.
		int local = ELF64_ST_BIND(s->st_info) == STB_LOCAL;
		int cpython = (local && in_cpython_file == 1) || ((!local || in_cpython_file == 2) && cpython_caller(name, max));
		int label = !local && cpython_name(name, max);
		nfile += local && in_cpython_file == 1;
		ncpython += cpython;
		if (!cpython && mode == STATIC_SYMBOLS) continue; // only the dynamic table needs the others
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			struct code_range *nr = realloc(r, cap * sizeof *r);
			if (!nr) {
				free(r);
				return STATIC_NONE;
			}
			r = nr;
		}
		r[n].lo = lo;
		r[n].hi = lo + s->st_size;
		r[n].cpython = cpython;
		r[n].label = label;
		n++;
	}
	if (!self || ncpython == 0 || (mode == STATIC_SYMBOLS && nfile == 0)) {
		free(r);
		return STATIC_NONE;
	}
	qsort(r, n, sizeof *r, range_cmp);
	ranges = r;
	nranges = n;
	return mode;
}

// scan_file reads the symbol table of the object's file (an ELF file the
// kernel or ld.so loaded: its headers are checked only as far as reading
// them safely needs). STATIC_NONE when it cannot be read (no /proc, an
// executable its user may run but not read) or has none.
static int scan_file(void) {
	int fd = open(exe_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return STATIC_NONE;
	struct stat st;
	if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(ElfW(Ehdr))) {
		close(fd);
		return STATIC_NONE;
	}
	size_t size = (size_t)st.st_size;
	const unsigned char *file = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (file == MAP_FAILED) return STATIC_NONE;
	int mode = STATIC_NONE;
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)file;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    eh->e_shoff > size || (size - eh->e_shoff) / sizeof(ElfW(Shdr)) < eh->e_shnum)
		goto out;
	const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(file + eh->e_shoff);
	for (size_t i = 0; i < eh->e_shnum && mode == STATIC_NONE; i++) {
		const ElfW(Shdr) *tab = &sh[i];
		if (tab->sh_type != SHT_SYMTAB || tab->sh_link >= eh->e_shnum || tab->sh_entsize != sizeof(ElfW(Sym))) continue;
		const ElfW(Shdr) *str = &sh[tab->sh_link];
		if (tab->sh_offset > size || tab->sh_size > size - tab->sh_offset || str->sh_offset > size ||
		    str->sh_size > size - str->sh_offset)
			continue;
		mode = collect((const ElfW(Sym) *)(file + tab->sh_offset), tab->sh_size / sizeof(ElfW(Sym)),
		               (const char *)(file + str->sh_offset), str->sh_size, STATIC_SYMBOLS);
	}
out:
	munmap((void *)file, size);
	return mode;
}

// ---- the dynamic table's static functions, by the unwind tables ----------------
//
// The dynamic table names no static function. Placed by address, one can
// lie between two of CPython's named ones without being CPython's: the
// linker gathers every object's cold, start-up and hot code into groups,
// so the program's lies between the end of CPython's in one group and its
// start in the next. The unwind table (.eh_frame, always mapped, never
// stripped) lists every C function, its cold part its own entry, in the
// order of the objects on the link line, where the program's objects come
// before libpython's and the libraries after it: there, a function the
// dynamic table does not name lies among its own object's.

static uint64_t uleb(const uint8_t **p, const uint8_t *end) {
	uint64_t v = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) break;
	}
	return v;
}

// encoded reads a DWARF exception-header pointer (DW_EH_PE_*): the value's
// format in the low bits, what it is relative to in the high ones (only
// absolute and pc-relative occur here; datarel is the header's).
static int encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uintptr_t datarel, uintptr_t *out) {
	const uint8_t *q = *p;
	uint64_t v;
	size_t n;
	if (enc == 0xff) return -1; // omitted
	switch (enc & 0x0f) {
	case 0x00: n = sizeof(uintptr_t); break;
	case 0x02: case 0x0a: n = 2; break;
	case 0x03: case 0x0b: n = 4; break;
	case 0x04: case 0x0c: n = 8; break;
	case 0x01: v = uleb(&q, end); n = 0; break;
	default: return -1;
	}
	if (n) {
		if ((size_t)(end - q) < n) return -1;
		if (n == 2) { uint16_t x; memcpy(&x, q, 2); v = (enc & 0x08) ? (uint64_t)(int64_t)(int16_t)x : x; }
		else if (n == 4) { uint32_t x; memcpy(&x, q, 4); v = (enc & 0x08) ? (uint64_t)(int64_t)(int32_t)x : x; }
		else memcpy(&v, q, 8);
		q += n;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += (uintptr_t)*p; break;
	case 0x30: v += datarel; break;
	default: return -1;
	}
	*p = q;
	*out = (uintptr_t)v;
	return 0;
}

// cie_encoding: the pointer encoding of the FDEs of the CIE at cie.
static int cie_encoding(const uint8_t *cie, const uint8_t *end, uint8_t *enc) {
	uint32_t len;
	memcpy(&len, cie, 4);
	const uint8_t *p = cie + 4;
	if (len == 0xffffffff) return -1; // 64-bit lengths: not in what gcc emits here
	const uint8_t *stop = p + len;
	if (stop > end) return -1;
	p += 4; // CIE id
	uint8_t version = *p++;
	const char *aug = (const char *)p;
	size_t alen = strnlen(aug, (size_t)(stop - p));
	p += alen + 1;
	if (version >= 4) p += 2; // address and segment sizes
	(void)uleb(&p, stop);     // code alignment
	(void)uleb(&p, stop);     // data alignment (sleb: skipped alike)
	if (version == 1) p++; else (void)uleb(&p, stop);
	*enc = 0x00; // absolute, native size, without an 'R'
	if (aug[0] != 'z') return 0;
	(void)uleb(&p, stop);
	for (size_t i = 1; i < alen && p < stop; i++) {
		uintptr_t ignored;
		switch (aug[i]) {
		case 'R': *enc = *p++; break;
		case 'L': p++; break;
		case 'P': {
			uint8_t penc = *p++;
			if (encoded(&p, stop, penc & 0x7f, 0, &ignored) != 0) return -1;
			break;
		}
		case 'S': case 'B': break;
		default: return 0; // past what is known: the encoding, if any, was read
		}
	}
	return 0;
}

struct fde {
	uintptr_t lo, hi;
	int cpython; // -1 while unknown
};

// range_at: the range holding a, or NULL. Ranges overlap only as aliases:
// the latest start at or below a is the one.
static const struct code_range *range_at(uintptr_t a) {
	size_t lo = 0, hi = nranges; // first range with ranges[i].lo > a
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ranges[mid].lo <= a) lo = mid + 1;
		else hi = mid;
	}
	return lo > 0 && a < ranges[lo - 1].hi ? &ranges[lo - 1] : NULL;
}

// named_label: the label of the named function holding a, -1 for none.
static int named_label(uintptr_t a) {
	const struct code_range *r = range_at(a);
	return r ? r->label : -1;
}

// place_static_functions adds to ranges every function of the unwind table
// that the dynamic table does not name, CPython's when the nearest named
// functions before and after it in the table's order are both named as
// CPython's (Py, _Py): a static function of one of CPython's objects. A
// program's static C function between two Py-named ones of its own (an
// extension module of its, linked in) would be taken for one too: the
// symbol table (an executable not stripped) tells those apart. -1 when the
// table cannot be read.
static int place_static_functions(void) {
	const uint8_t *h = exe_ehhdr, *end = (const uint8_t *)exe_ehseg_hi;
	if (!h || end - h < 8 || h[0] != 1) return -1;
	const uint8_t *p = h + 4;
	uintptr_t eh;
	if (encoded(&p, end, h[1], (uintptr_t)h, &eh) != 0) return -1;
	const uint8_t *q = (const uint8_t *)eh;
	if (q < (const uint8_t *)exe_bias || q >= end) return -1;
	size_t cap = 0, n = 0;
	struct fde *f = NULL;
	const uint8_t *last_cie = NULL;
	int last_ok = 0;
	uint8_t enc = 0;
	for (;;) {
		if (end - q < 4) break;
		uint32_t len;
		memcpy(&len, q, 4);
		if (len == 0) break; // the terminator
		if (len == 0xffffffff || (size_t)(end - q - 4) < len || len < 4) break;
		const uint8_t *rec = q + 4, *next = rec + len;
		uint32_t id;
		memcpy(&id, rec, 4);
		if (id != 0) { // an FDE; id is the distance back to its CIE
			const uint8_t *cie = rec - id;
			uintptr_t pc, range;
			const uint8_t *r = rec + 4;
			if (cie != last_cie) { // CIEs are few and shared: read each once in a row
				last_ok = cie >= (const uint8_t *)eh && cie < rec && cie_encoding(cie, end, &enc) == 0;
				last_cie = cie;
			}
			if (last_ok &&
			    encoded(&r, next, enc, 0, &pc) == 0 && encoded(&r, next, enc & 0x0f, 0, &range) == 0 && range) {
				if (n == cap) {
					cap = cap ? 2 * cap : 4096;
					struct fde *nf = realloc(f, cap * sizeof *f);
					if (!nf) {
						free(f);
						return -1;
					}
					f = nf;
				}
				f[n].lo = pc;
				f[n].hi = pc + range;
				f[n].cpython = named_label(pc);
				n++;
			}
		}
		q = next;
	}
	if (n == 0) {
		free(f);
		return -1;
	}
	// Unknown ones take their neighbours' answer, in the table's order: a
	// pass backwards marks each with the next named one's label (4 + label),
	// a pass forwards decides with the previous one's.
	int after = 0, before = 0;
	for (size_t i = n; i-- > 0;) {
		if (f[i].cpython >= 0) after = f[i].cpython;
		else f[i].cpython = 4 + after;
	}
	for (size_t i = 0; i < n; i++) {
		if (f[i].cpython < 2) {
			before = f[i].cpython;
			continue;
		}
		f[i].cpython = before && f[i].cpython == 5 ? 2 : 3; // 2, 3: placed here (yes, no)
	}
	// Kept: CPython's ranges only (an address in none is not CPython's).
	size_t keep = 0;
	for (size_t i = 0; i < nranges; i++) keep += ranges[i].cpython;
	for (size_t i = 0; i < n; i++) keep += f[i].cpython == 2;
	struct code_range *r = malloc((keep ? keep : 1) * sizeof *r);
	if (!r) {
		free(f);
		return -1;
	}
	size_t k = 0;
	for (size_t i = 0; i < nranges; i++)
		if (ranges[i].cpython) r[k++] = ranges[i];
	for (size_t i = 0; i < n; i++)
		if (f[i].cpython == 2) r[k++] = (struct code_range){f[i].lo, f[i].hi, 1, 1};
	free(f);
	free(ranges);
	qsort(r, k, sizeof *r, range_cmp);
	ranges = r;
	nranges = k;
	return 0;
}

// dyn_ptr: glibc relocates the dynamic section's addresses in place when it
// loads an object at a bias (x86-64 and most others); where it does not,
// they are link-time addresses, below the bias.
static const void *dyn_ptr(uintptr_t p) { return (const void *)(p < exe_bias ? p + exe_bias : p); }

// scan_memory reads the dynamic symbol table the loader mapped, needing no
// file. Its size is not recorded anywhere: the hash table gives the
// number of symbols (DT_HASH's chain count, or past GNU hash's highest
// chain).
static int scan_memory(void) {
	const ElfW(Sym) *syms = NULL;
	const char *strs = NULL;
	size_t strsz = 0, nsyms = 0;
	const uint32_t *gnu = NULL, *sysv = NULL;
	for (const ElfW(Dyn) *d = exe_dyn; d && d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: syms = dyn_ptr(d->d_un.d_ptr); break;
		case DT_STRTAB: strs = dyn_ptr(d->d_un.d_ptr); break;
		case DT_STRSZ: strsz = d->d_un.d_val; break;
		case DT_HASH: sysv = dyn_ptr(d->d_un.d_ptr); break;
		case DT_GNU_HASH: gnu = dyn_ptr(d->d_un.d_ptr); break;
		}
	}
	if (!syms || !strs || !strsz) return STATIC_NONE;
	if (sysv) {
		nsyms = sysv[1];
	} else if (gnu) {
		uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
		const uint32_t *buckets = gnu + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
		const uint32_t *chain = buckets + nbuckets;
		uint32_t last = 0;
		for (uint32_t b = 0; b < nbuckets; b++)
			if (buckets[b] > last) last = buckets[b];
		if (last < symoffset) {
			nsyms = symoffset;
		} else {
			while (!(chain[last - symoffset] & 1)) last++;
			nsyms = (size_t)last + 1;
		}
	} else {
		return STATIC_NONE;
	}
	if (collect(syms, nsyms, strs, strsz, STATIC_DYNAMIC) == STATIC_NONE) return STATIC_NONE;
	if (place_static_functions() != 0) {
		free(ranges);
		ranges = NULL;
		nranges = 0;
		return STATIC_NONE;
	}
	return STATIC_DYNAMIC;
}

static void prepare_static(void) {
#ifdef DUET_STATIC_PYTHON
	dl_iterate_phdr(find_own, (void *)(uintptr_t)duet_interpose_prepare);
	if (!exe_hi) return;
	int mode = scan_file();
	if (mode == STATIC_NONE) mode = scan_memory();
	if (mode != STATIC_NONE) __atomic_store_n(&static_mode, mode, __ATOMIC_RELEASE);
	// else nothing is interposed: signals.c puts CPython's changes back by hand
#endif
}

static pthread_once_t prepare_once = PTHREAD_ONCE_INIT;

// duet_interpose_prepare learns where CPython's code is, in a static build;
// before Python starts (duet_init), so that no process pays for it that
// never starts Python.
void duet_interpose_prepare(void) { pthread_once(&prepare_once, prepare_static); }

// static_cpython: whether the code at a (inside the executable) is
// CPython's: the function holding it says, named by the symbol table, or
// by the dynamic one and placed by the unwind table. Code in neither (Go's,
// which has no unwind entries in it) is not.
static int static_cpython(uintptr_t a) {
	const struct code_range *r = range_at(a);
	return r && r->cpython;
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
// they handled takes the disposition the process started with, or runs
// CPython's handler when Python code handles it (child_dispositions). A child that runs
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

static void child_dispositions(int everything);

static void atfork_child(void) {
	child_dispositions(0);
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

// child_dispositions gives a child of the Go program Python's view in
// place of Go's handlers, which cannot run there: for a signal Go handles,
// the handler Python asked for, else the disposition the process started
// with; everything (a child that runs Python code, duet_child_signals)
// also gets the SIG_DFL and SIG_IGN Python asked for, which a child that
// execs at once does not (subprocess, as without duet). Only in the Go
// program's own children: a child that forks again (a daemon's double
// fork) has its own dispositions, Python's already.
static void child_dispositions(int everything) {
	if (!real_sigaction || getppid() != our_pid) return;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP) continue;
		struct sigaction cur;
		if (real_sigaction(sig, NULL, &cur) != 0) continue;
		int handled = is_handler(&cur);
		if (!everything && !handled) continue;
		if (__atomic_load_n(&py_asked[sig], __ATOMIC_ACQUIRE) && (everything || is_handler(&py_action[sig])))
			real_sigaction(sig, &py_action[sig], NULL);
		else if (handled)
			real_sigaction(sig, &start_action[sig], NULL);
	}
}

__attribute__((constructor)) static void interpose_init(void) {
	resolve();
	our_pid = getpid();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
#ifndef DUET_STATIC_PYTHON
	// In the static build a libpython.so loaded anyway (LD_PRELOAD, a
	// plugin linked against it) is not where CPython runs.
	dl_iterate_phdr(find_libpython, NULL);
#endif
	if (!real_sigaction) return;
	for (int sig = 1; sig < NSIG; sig++) {
		if (real_sigaction(sig, NULL, &start_action[sig]) != 0 || is_handler(&start_action[sig])) {
			memset(&start_action[sig], 0, sizeof start_action[sig]); // a handler set before us: not Python's
			start_action[sig].sa_handler = SIG_DFL;
		}
	}
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

// from_python: the call returning to ra is CPython's (see the top).
static int from_python(void *ra) {
	if (duet_forked_child()) return 0;
	uintptr_t a = (uintptr_t)ra;
	if (py_hi) return a >= py_lo && a < py_hi;
	int mode = __atomic_load_n(&static_mode, __ATOMIC_ACQUIRE);
	if (mode == STATIC_NONE || a < exe_lo || a >= exe_hi) return 0; // a shared library's call
	return static_cpython(a);
}

// duet_from_python_at answers from_python for a code address (the test of
// the caller list); duet_interpose_mode says how CPython's calls are told:
// 0 not at all, 1 libpython.so's segment, 2 the symbol table, 3 the
// dynamic symbol table (a stripped executable).
int duet_from_python_at(uintptr_t a) { return from_python((void *)a); }
uintptr_t duet_exe_bias(void) { return exe_bias; }
int duet_interpose_mode(void) {
	if (py_hi) return 1;
	int mode = __atomic_load_n(&static_mode, __ATOMIC_ACQUIRE);
	return mode == STATIC_SYMBOLS ? 2 : mode == STATIC_DYNAMIC ? 3 : 0;
}

// duet_os_sigaction is libc's sigaction, for duet's own C code: never taken
// for CPython's, whatever the build.
int duet_os_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
	if (__builtin_expect(!real_sigaction, 0)) resolve();
	return real_sigaction(sig, act, old);
}

// duet_child_signals gives a forked child that runs Python code the
// dispositions Python asked for (CPython's handlers, SIG_IGN for
// SIGPIPE...), and for every other signal Go handled the starting one.
void duet_child_signals(void) {
	if (duet_forked_child()) child_dispositions(1);
}

// CPython is told, for each signal, what python3 would find in place: what
// it asked for, else what the process started with (SIG_DFL or an
// inherited SIG_IGN), never Go's handler. CPython keeps what it is told
// and sets it back later (faulthandler's disable and unregister, and its
// fatal handler, put back the action they found; siginterrupt reads and
// sets back with SA_RESTART changed; readline restores SIGINT's), so its
// bookkeeping stays python3's, and a forked child, which gets Python's
// view, never gets a handler of Go's with no Go runtime there to run it.
int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
	if (__builtin_expect(!real_sigaction, 0)) resolve();
	if ((act || old) && sig > 0 && sig < NSIG && from_python(__builtin_return_address(0))) {
		if (act && (sig == SIGKILL || sig == SIGSTOP)) {
			errno = EINVAL;
			return -1;
		}
		struct sigaction view = __atomic_load_n(&py_asked[sig], __ATOMIC_ACQUIRE) ? py_action[sig] : start_action[sig];
		if (act) {
			py_action[sig] = *act;
			__atomic_store_n(&py_asked[sig], 1, __ATOMIC_RELEASE);
		}
		if (old) *old = view;
		return 0;
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
// when it never asked (or CPython's code was not found: then nothing is
// interposed, and signals.c falls back to putting actions back by hand).
int duet_python_action(int sig, struct sigaction *out) {
	if (sig <= 0 || sig >= NSIG || !__atomic_load_n(&py_asked[sig], __ATOMIC_ACQUIRE)) return 0;
	*out = py_action[sig];
	return 1;
}

int duet_interposing(void) { return duet_interpose_mode() != 0 && real_sigaction != NULL; }
