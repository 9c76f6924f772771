# duet: make run starts the showcase app, make test runs every test.
SHELL := /bin/bash
GO ?= go

DEB_PACKAGES := gcc pkg-config libgtk-4-dev libadwaita-1-dev gir1.2-gtk-4.0 gir1.2-adw-1 \
	python3-dev python3-gi python3-gi-cairo python-gi-dev xvfb xauth imagemagick

# GUI programs and tests run under Xvfb when there is no display.
HEADLESS := $(if $(DISPLAY)$(WAYLAND_DISPLAY),,1)
XRUN := $(if $(HEADLESS),xvfb-run -a -s "-screen 0 1280x800x24",)
OUT := $(CURDIR)/out

.PHONY: help deps test vet sanitize run stress bench gallery-lines reload-shots explore

help:
	@echo "make run    start the showcase app (under Xvfb with a screenshot when there is no display)"
	@echo "make test   vet and run every test (the first build compiles gotk4's GTK bindings: ~10 min)"
	@echo "make sanitize  AddressSanitizer and UBSan over duet's C code (make test runs it)"
	@echo "make stress every stress scenario for STRESS_DURATION (default 60s); report and plot in out/stress"
	@echo "make bench  duet side by side with pure PyGObject and gotk4; the table goes to out/bench.md"
	@echo "make gallery-lines  the gallery's Go against its PyGObject twin, in lines"
	@echo "make reload-shots  the README's pictures of a reload (a Python widget's drawing, a .ui file broken then fixed) in docs/reload/"
	@echo "make explore  duetexplore on every example for EXPLORE_DURATION each (default 5m); logs and traces in out/explore"

deps:
	@scripts/deps.sh $(DEB_PACKAGES)

vet: deps
	$(GO) vet ./...
	$(GO) vet -tags duet_sharedpython ./internal/capi
	$(GO) run ./cmd/duetvet ./...

# Headless runs have no session bus: keep GTK's accessibility bridge quiet.
export GTK_A11Y := $(if $(HEADLESS),none,$(GTK_A11Y))

# Every package runs under the race detector. gotk4's interning converts
# C pointers in ways the race build's pointer checks (checkptr) reject, so
# for the packages that link it only checkptr is switched off; their first
# race build compiles gtk/v4 once more (about ten minutes, then cached).
RACE_GTK_FLAGS := -race -gcflags=all=-d=checkptr=0

# duet's embedded Python compiled ahead (internal/pysrc/precompiled.go):
# derived from the .py files by this machine's Python, so not in git; made
# here before anything is built, with the flags of the target that asks,
# whose build cache is the warm one (the tests' race build, the showcase's
# plain one). It is made every time, not by timestamps: a rename keeps a
# file's time, Modules are declared all over the tree, and a damaged file
# is newer than every source; the generator replaces it only when its
# contents change. Without it, modules compile from source as they load.
PRECOMPILED := internal/pysrc/precompiled/code.bin
PRECOMPILE_FLAGS ?=
.PHONY: precompiled
precompiled: deps
	@echo "== compiling duet's embedded Python ahead ($(PRECOMPILED))"
	@$(GO) run $(PRECOMPILE_FLAGS) ./internal/pysrc/precompile -o $(PRECOMPILED)
test: PRECOMPILE_FLAGS = $(RACE_GTK_FLAGS)

# The build with the shared libpython (tag duet_sharedpython) tells
# CPython's signal calls apart by another rule (internal/capi/interpose.c):
# its tests of that rule.
SHARED_TESTS := Signal|Faulthandler|HostKeeps|HostSignals|ChildProcessesInherit|Subprocess|Dispositions

test: vet precompiled
	@mkdir -p $(OUT)
	@nogtk="$$(scripts/pkgs.sh nogtk)"; gtk="$$(scripts/pkgs.sh gtk)"; \
	export DUET_SCREENSHOTS=$(OUT); \
	set -e; \
	if [ -n "$$nogtk" ]; then echo "== go test -race (packages without gtk/v4)"; $(XRUN) $(GO) test -race -count=1 $$nogtk; fi; \
	if [ -n "$$gtk" ]; then echo "== go test $(RACE_GTK_FLAGS) (packages with gtk/v4; the first run compiles it for the race detector)"; $(XRUN) $(GO) test $(RACE_GTK_FLAGS) -count=1 $$gtk; fi
	@echo "== go test -tags duet_sharedpython (libpython3.11.so instead of the static archive: the signal rules)"
	@$(XRUN) $(GO) test -tags duet_sharedpython -count=1 -run '$(SHARED_TESTS)' ./eventloop
	@$(MAKE) --no-print-directory sanitize

# AddressSanitizer and UBSan over duet's C code (and Go's -asan), for the
# packages that do not link gotk4 (those would compile gtk/v4 once more,
# about ten minutes cold). Sanitizers take over no signal Go needs: Go's
# handlers stay (a recovered nil dereference is a Go panic), ASan reports
# bad memory accesses and UBSan undefined behaviour, and either ends the
# test. make test runs it.
# PYTHONMALLOC=malloc: Python's objects come from malloc, where ASan sees
# them (pymalloc's arenas would hide a use after free of a Python object).
SAN_ENV := PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0:allow_user_segv_handler=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	CGO_CFLAGS="-O1 -g -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" CGO_LDFLAGS="-fsanitize=undefined"
sanitize: deps
	@nogtk="$$(scripts/pkgs.sh nogtk | grep -v /examples)"; echo "== go test -asan, UBSan (packages without gtk/v4; not the examples, which build it)"; \
	$(XRUN) env $(SAN_ENV) $(GO) test -asan -count=1 $$nogtk

run: deps precompiled
	@mkdir -p $(OUT)
ifeq ($(HEADLESS),1)
	@echo "no display: running the showcase under Xvfb; it saves a screenshot and exits"
	DUET_SCREENSHOT=$(OUT)/showcase.png $(XRUN) $(GO) run ./examples/showcase
	@echo "screenshot: $(OUT)/showcase.png"
else
	$(GO) run ./examples/showcase
endif

# A .ui file reloaded in a running app, headless: out/reload-before.png,
# reload-broken.png (the banner), reload-after.png.
# The README's pictures of a reload, in docs/reload (committed: the README
# shows them). Always under Xvfb, with a display or not: no window manager
# puts the window at 0,0, where reloadshot crops it.
RELOAD_SHOTS := $(CURDIR)/docs/reload
reload-shots: deps precompiled
	@mkdir -p $(RELOAD_SHOTS)
	GTK_A11Y=none xvfb-run -a -s "-screen 0 1280x800x24" $(GO) run ./examples/internal/reloadshot -out $(RELOAD_SHOTS)

STRESS_DURATION ?= 60s
stress: deps precompiled
	@mkdir -p $(OUT)/stress
	$(GO) run ./stress -scenario all -duration $(STRESS_DURATION) -report $(OUT)/stress

bench: deps precompiled
	@mkdir -p $(OUT)
	$(XRUN) $(GO) run ./stress/bench -out $(OUT)/bench.md -readme $(CURDIR)/README.md

# The gallery against its PyGObject twin: lines of code, without blank and
# comment lines (the aim: Go at most 1.5 times the Python).
gallery-lines:
	@go=$$(grep -v '^[[:space:]]*$$' examples/gallery/main.go | grep -cv '^[[:space:]]*//'); \
	py=$$(grep -v '^[[:space:]]*$$' examples/gallery/gallery.py | grep -cv '^[[:space:]]*#'); \
	echo "examples/gallery: Go $$go lines, PyGObject $$py lines, ratio $$(awk "BEGIN { printf \"%.2f\", $$go / $$py }") (aim <= 1.5)"

# duetexplore on every example, one after the other, EXPLORE_DURATION each
# (-keep-going: every finding of the run, each confirmed and shrunk). Each
# example's log and its findings' traces go to out/explore/NAME.log and
# out/explore/NAME/; it fails if any example gave a finding (or could not
# be explored). duetexplore runs itself under Xvfb when there is no display.
EXPLORE_DURATION ?= 5m
# GTK 4.8 warns now and then that it snapshots the trough of a scrolled
# window's scrollbar before allocating it, while the text view in the
# window grows (the showcase's log, which the toggle appends to): the
# explorer names the widget (DuetLogView > GtkScrollbar > GtkRange >
# GtkGizmo); no code of the program's touches it.
GTK48_TROUGH := ^Gtk-WARNING: Trying to snapshot GtkGizmo 0x[0-9a-f]+ without a current allocation$$
EXPLORE_EXAMPLES := hello awaker gallery goroutines quotes showcase builder subclass typed weak
explore: deps precompiled
	@mkdir -p $(OUT)/explore
	@$(GO) build -o $(OUT)/explore/duetexplore ./cmd/duetexplore
	@set -u; total=$(words $(EXPLORE_EXAMPLES)); i=0; summary=""; bad=0; \
	for ex in $(EXPLORE_EXAMPLES); do \
		i=$$((i+1)); args=""; ignore=""; \
		case $$ex in gallery) args="-file examples/gallery/gallery.py";; \
		showcase) ignore="$(GTK48_TROUGH)";; esac; \
		echo "== explore [$$i/$$total] $$ex for $(EXPLORE_DURATION) (log: $(OUT)/explore/$$ex.log)"; \
		rm -rf $(OUT)/explore/$$ex; \
		env -u DUET_SCREENSHOT $(OUT)/explore/duetexplore -duration $(EXPLORE_DURATION) -keep-going -ignore-log "$$ignore" \
			-o $(OUT)/explore/$$ex ./examples/$$ex $$args 2>&1 | tee $(OUT)/explore/$$ex.log | grep --line-buffered '^duetexplore: \|^explore: '; \
		status=$${PIPESTATUS[0]}; \
		case $$status in \
		0) what="nothing found";; \
		3) what="$$(grep -o '[0-9]* distinct findings' $(OUT)/explore/$$ex.log | tail -1): $(OUT)/explore/$$ex/"; bad=1;; \
		*) what="failed (status $$status): $(OUT)/explore/$$ex.log"; bad=1;; \
		esac; \
		echo "== $$ex: $$what"; \
		summary="$$summary$$(printf '  %-11s %s' $$ex "$$what")\n"; \
	done; \
	echo "== make explore ($(EXPLORE_DURATION) each):"; printf "$$summary"; \
	exit $$bad
