// Package explore drives a running duet program through its own UI, as a
// user would, with both garbage collectors forced between the actions, and
// reports the trouble it meets: Go panics and Python exceptions in
// handlers, GLib and GTK warnings and criticals, stalls of the UI thread,
// and leaks.
//
// # The model
//
// Run explores the program it runs in; the program's loop must be running
// (from an app's activate on, say: app.Main and app.App.Run start it for
// any program when DUET_EXPLORE is set, see package app; cmd/duetexplore
// runs a program so from outside; the stress harness's explore scenario,
// go run ./stress -scenario explore, runs it as a workload). At each step, in
// one visit to the UI thread, the explorer lists what a user could act on
// now, in every visible toplevel (Gtk.Window.list_toplevels, walked with
// get_first_child and get_next_sibling: dialogs are windows too, and a
// popover shown is walked where it hangs, under its menu button or other
// parent widget): buttons to click, toggle and check buttons and switches to flip,
// entries and text views to type into (short, long, empty and non-ASCII
// text), spin buttons and scales to set (their extremes included),
// drop-downs to pick from, notebooks whose tab to switch (a stack's pages
// only through what the program offers, its switcher's buttons: a wizard
// switched by hand reaches states no user can), list boxes' rows and list,
// grid and column views' items to select (as a click or the arrow keys
// select one: the row alone, through the list box's select_row or the
// view's selection model; not in a view whose model is a Gtk.NoSelection)
// and to open (as Enter or a double click: a list box row's activate,
// which selects it and emits row-activated, or the view's activate signal
// with the item's position), windows to close (dialogs and secondary
// windows, as their title bar's close button does: close-request first,
// whose handler may refuse; opened again through whatever opened them,
// which the explorer acts on like anything else), and
// the application's and windows' actions (those without a parameter, or
// with one the explorer can make valid: see below). It
// picks one with the run's seeded generator and does it through GTK's
// public API (emit("clicked"), activate, set_text, set_value,
// set_selected, select_item, close, activate_action ...), so the
// program's handlers run as they would for a user. Hidden, insensitive
// and read-only widgets are left alone, and so are link buttons (they
// open a browser), the action "quit" and closing the program's last
// visible window (of its application's windows, for one of those; a
// window without a close button too): either would end the program, and
// the run with it.
//
// Behind a modal window nothing is done, as no user can: GTK 4 shows a
// visible modal window with a grab on its window group, and the input of
// the group's other windows goes nowhere (not only the window it is
// transient for: the default group holds every window not put in one of
// its own, so an unrelated toplevel of the program is blocked too, while
// a window of another Gtk.WindowGroup is not). So while one is up, of
// its group only the modal window (the last made, of several: a dialog
// opened from a dialog) and what hangs from it (its popovers) are
// candidates, its windows behind it are neither walked nor closed, and
// the application's actions (a user's through menus and shortcuts) are
// left alone unless the modal window is one of the application's own.
//
// An action's parameter is one it is known to take when its state says
// which: one of its state hint's enumeration, or within its state hint's
// range (its extremes included); for a stateful action with no hint (a
// radio, whose other values are in the program's menus, which the
// explorer does not read), its current state, the one value known valid
// (either value for a boolean). GLib checks neither a hint nor a radio's
// values, so a parameter outside them would become the state and fail a
// handler no menu of the program's could fail: a false alarm. An action
// without a state takes any value of its parameter's type: a boolean, an
// integer (0, 1, -1 and the extremes); one whose parameter is of another
// type (a string: any string is none) is left alone. An exception the
// activation call itself raises (GLib or PyGObject refusing the
// parameter; a handler's never comes back through it) is no finding: the
// action reads "(refused: ...)".
//
// Every candidate has an address that does not depend on where anything
// sits in memory: the window's title (or type), then, down the widget
// tree, each widget's GType, its index among the siblings of that type,
// and what it reads (its label, the name the program gave it, or its
// accessible role). A list's rows are not addressed one by one: the list
// box or view is, and the row's position is the action's input (a view's
// row widgets are recycled as it scrolls, and only those on screen
// exist). The widgets inside a row (a button in a list item) are walked as
// anywhere, so their addresses name the row on screen (its index among
// the view's realised rows), not the item: they hold for the same model,
// scroll position and size, as in a replay of the same program. The
// candidates are sorted by address before the choice, so the same seed on
// the same program takes the same actions in the same order (as long as
// the program itself does the same thing each time: a program that shows
// the clock does not). Only an action draws from the generator: a step
// that finds nothing to act on (a window not up yet) draws nothing, so
// the machine's speed does not shift the choices.
//
// What a widget reads may change (a button that counts its clicks): its
// address then changes too, but its structural key, the address without
// what the widgets read ("window 'w' > GtkBox#0 > GtkButton#1"), does not.
// Coverage (Report.Seen and Report.Reached) counts widgets and actions by
// it, and a replay that finds no candidate at a recorded address takes the
// one candidate with the same structural key and verb. A window's title
// stays in the key (coverage counts a window whose title changes as
// another one), but a window's title may change (a document window that
// says its file's name): each action also records its window's key
// (Action.WindowKey: the window's GType and its index among the visible
// windows of that type, in the order they were made, "GtkWindow#1"), and
// a replay that finds neither the address nor the structural key takes
// the one candidate with the same verb, in the window of that key, with
// the same structural key below the window. A window that closed by
// itself before the replay's action on it (a toast that went sooner) has
// no key then: the action finds nothing, a replay error (the UI changed),
// never an action on another window.
//
// # Findings
//
// Each Finding has a Kind, a one-line message, the source line it points
// at when one is known, and the trace of the actions up to it:
//
//   - a Go panic (a Go handler's panic reaches Python and comes back
//     through eventloop.OnPythonException; a panic in Invoke work or a
//     timer through eventloop.OnPanic), pointed at the panicking line of
//     the program;
//   - a Python exception nobody caught, at its innermost frame;
//   - a GLib or GTK warning or critical, named by its domain and level
//     ("GLib-GObject-CRITICAL: ...": eventloop.RouteLogs routes the
//     records to the explorer while it runs; other records, a program's
//     own Python warnings among them, still print on stderr). PyGObject
//     makes the warnings and criticals of GLib, GLib-GObject and GThread
//     Python warnings, which lose their domain and level: while it runs,
//     the explorer puts a log handler of its own ahead of PyGObject's for
//     those domains (and GLib-GIO), which hands them to GLib's default
//     handler, as any other domain's go, and takes it out at the end.
//     While it runs, a handler the program set for those domains itself
//     (GLib.log_set_handler) does not see their messages: GLib gives each
//     message to the newest handler of its domain, the explorer's; a
//     warning such a program silences on purpose is a finding then.
//     A message that names a widget by its address ("Trying to snapshot
//     GtkGizmo 0x33d9640 without a current allocation": GTK's internal
//     widgets have no other name) has in its Detail where that widget is
//     in the UI, found when the message comes (on the UI thread, in the
//     middle of a frame maybe; the walk only reads): "GtkGizmo 0x33d9640
//     is at window 'main' > … > GtkScrollbar#0 > GtkRange#0 > GtkGizmo#0".
//     Under G_DEBUG=fatal-criticals, as in looptest, a critical aborts
//     the process instead: explore such programs without it;
//   - a stall: an action whose handlers, or the work they queued (an idle,
//     a timer, an Invoke: a round trip to the UI thread after each action
//     measures it), kept the UI thread longer than Options.Stall (1 s);
//   - a hang: the UI thread did not come back within Options.Hang (10 s);
//     the run ends there, with the action that never returned last in its
//     trace (package app prints the report at once: the program itself may
//     never end);
//   - a leak: every Options.LeakEvery actions, once both collectors have
//     run, the explorer takes a forensics census (live Go callbacks by
//     name and site, Python objects Go holds by type, and the GObjects
//     duet tracks or watches by GType) and one of what the program's
//     Python holds (the GObjects Python has a wrapper of, by GType: a list
//     of labels no Go code knows of; and the instances of the program's
//     own Python classes, those of modules loaded from its files, not
//     Python's library, site packages, PyGObject's or duet's, by class;
//     an object it cannot read, a weak proxy say, is left out); a row
//     that grew at each of Options.LeakRounds censuses in a row is a leak,
//     a row of what the program's Python holds at each of twice as many
//     (a program keeps bounded histories of its own objects, which grow
//     as a leak does while they fill; one bounded above that still
//     reads as a leak: raise LeakRounds), and a GType both duet watches
//     and Python holds is one leak, not two. Counting what Python holds
//     walks the collector's objects on the UI thread: with a million of
//     them, about 0.4 s a census.
//
// A run stops at its first finding unless Options.KeepGoing; the same
// trouble seen again is counted (Finding.Repeats), not listed again.
//
// # Replay
//
// Each Action keeps its Input, what doing it again needs (the whole text
// typed and whether Enter ended it, the number set, the item's or row's
// position, the page's index, the action's parameter). The input is chosen
// first, then the action is done from it, the one way a replay does it
// too; so the action under way has its input already, and what a crashed
// process was doing replays. With Options.Replay (or
// DUET_EXPLORE=replay=FILE, FILE the JSON lines a run wrote, read with
// ReadReport), the run draws nothing: at each step it takes the next
// recorded action, finds the candidate whose address and verb are the
// recorded ones (or its structural key, see above) and does it with the
// recorded input, at the same pace and
// with the same forced collections, and ends after the last one. An
// address not there (within Options.ReplayWait) or an input that does not
// fit (an item the drop-down or the list no longer has) ends it with
// Report.ReplayError, which is not a finding; Report.Reproduced says
// whether Options.Expect, the file's first finding, came back
// (Finding.Same: the same kind at the same place; for a leak, the same
// thing leaking, whatever the counts, which a shorter trace changes). Options.OnAction sees
// each action before and after it is done (package app streams them to
// DUET_EXPLORE_TRACE).
//
// cmd/duetexplore runs a program in a child process, where a crash
// (KindCrash) and a program that never ends are findings too, and so is
// one that stops making progress (neither an action nor package app's
// heartbeat on DUET_EXPLORE_TRACE for the hang's time and a margin: the
// whole process stuck, the explorer with it; KindHang), replays a
// finding's trace in a fresh process to confirm it, and shrinks it by
// delta debugging to a short trace that still gives it, and (-test)
// writes that as a Go regression test in the app's package. With
// -keep-going it collects every finding of a run (Options.KeepGoing in
// the child, whose findings Options.OnFinding streams; a fresh child, with
// the next seed, after a crash or a hang), then confirms, shrinks and
// writes each.
//
// # The report
//
// A Report has the trace, the findings (each with the time it was seen,
// Finding.At), the coverage (Report.Seen widgets and actions could be
// acted on at some point, Report.Reached were) and the samples: Run takes
// a Sample at its start, about every 250 ms between two steps and at its
// end, from its own goroutine and without a visit to the UI thread (the
// time, the actions and findings so far, the live Go callbacks of
// forensics.Stats, the process's RSS from /proc/self/statm). WriteJSON
// writes all of it as JSON lines, the summary line with the actions per
// second and the coverage as a share, so that a tool needs no arithmetic;
// ReadReport reads it back. WritePlot draws a run as SVG in the stress
// harness's style: the actions, the live callbacks and the RSS on one
// timeline, each finding a red mark labelled with its kind (package app
// writes it to DUET_EXPLORE_PLOT, cmd/duetexplore to its -plot file).
//
// # API
//
//   - Running: [Run] with [Options] ([ParseOptions] reads them as
//     DUET_EXPLORE writes them).
//   - What it did and found: [Report] ([Report.String], [Report.WriteJSON],
//     read back with [ReadReport], lines up to [MaxLine] long;
//     [Report.WritePlot] draws it), its [Action] values ([Action.String]),
//     its [Sample] values, and each [Finding] ([Finding.String];
//     [Finding.Same], what a replay must meet again; [Finding.Distinct],
//     what a run that goes on counts apart) of a [Kind]:
//     [KindPanic], [KindException], [KindLog], [KindStall], [KindHang],
//     [KindLeak], [KindCrash].
//
// Threads: Run from a goroutine (the actions run on the UI thread, which it
// waits for); everything else is plain data.
package explore
