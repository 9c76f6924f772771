package reload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/duet-gtk/duet/eventloop"
)

// Config configures a Watcher.
type Config struct {
	// Dir is where the files LoadFS loaded are on disk (app.Options.ReloadDir);
	// empty: found among the directories the registry guessed and Guess.
	Dir string
	// Guess is one more directory where LoadFS's files may be: the
	// directory of the source file that made the app.
	Guess string
	// Debounce is how long a file must stay quiet before it is reloaded
	// (editors write a file in several steps); 0 means 100 ms.
	Debounce time.Duration
	// Out gets the reports' lines (default os.Stderr).
	Out io.Writer
}

// A Watcher watches the recorded files and reloads those that change.
type Watcher struct {
	cfg    Config
	fw     *fsnotify.Watcher
	kick   chan struct{}
	done   chan struct{}
	closed atomic.Bool
	once   sync.Once

	// The goroutine's own.
	seen    map[*record]*file   // every record sync looked at
	files   map[string]*file    // path -> the file watched there
	dirs    map[string]bool     // watched directories
	pending map[*file]time.Time // when a changed file is quiet enough
	saved   map[*file]time.Time // the first event of the pending change
	timer   *time.Timer
}

// A file is a record as one watcher sees it.
type file struct {
	rec     *record
	path    string // on disk ("" when not found)
	handed  string // the last source handed to the UI thread
	missing bool   // said that the file is gone (or was never found)
}

// running counts the watchers started and not yet closed, for tests.
var running atomic.Int64

// Running is how many watchers run (tests: none unless development mode).
func Running() int64 { return running.Load() }

// ErrRunning: Start while a watcher runs.
var ErrRunning = errors.New("reload: a watcher is running already")

// Start starts watching the files recorded and those recorded from now on,
// until Close. One watcher at a time.
func Start(cfg Config) (*Watcher, error) {
	if cfg.Debounce <= 0 {
		cfg.Debounce = 100 * time.Millisecond
	}
	if cfg.Out == nil {
		cfg.Out = os.Stderr
	}
	if cfg.Dir != "" {
		if abs, err := filepath.Abs(cfg.Dir); err == nil {
			cfg.Dir = abs
		}
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.w != nil {
		return nil, ErrRunning
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("reload: %w", err)
	}
	w := &Watcher{
		cfg: cfg, fw: fw,
		kick: make(chan struct{}, 1), done: make(chan struct{}),
		seen: map[*record]*file{}, files: map[string]*file{}, dirs: map[string]bool{},
		pending: map[*file]time.Time{}, saved: map[*file]time.Time{},
		timer: time.NewTimer(time.Hour),
	}
	w.timer.Stop()
	registry.w = w
	running.Add(1)
	w.kick <- struct{}{}
	go w.run()
	return w, nil
}

// Close stops the watcher and waits for its goroutine (and fsnotify's) to
// end; a reload handed to the UI thread and not yet run is dropped. Any
// goroutine, the UI thread too; idempotent.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		w.closed.Store(true)
		registry.mu.Lock()
		if registry.w == w {
			registry.w = nil
		}
		registry.mu.Unlock()
		err = w.fw.Close() // ends fsnotify's goroutine, then run's loop
		<-w.done
		running.Add(-1)
		if eventloop.Running() {
			clearBanner()
		}
	})
	return err
}

func (w *Watcher) kickSync() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *Watcher) run() {
	defer close(w.done)
	defer w.timer.Stop()
	for {
		select {
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			w.event(ev)
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			w.say(fmt.Sprintf("duet reload: watching files: %v", err))
		case <-w.kick:
			w.sync()
		case <-w.timer.C:
			w.fire()
		}
	}
}

func (w *Watcher) say(line string) {
	if !w.closed.Load() {
		fmt.Fprintln(w.cfg.Out, line)
	}
}

// sync watches the records not seen yet.
func (w *Watcher) sync() {
	registry.mu.Lock()
	var recs []*record
	for _, r := range registry.recs {
		if w.seen[r] == nil {
			recs = append(recs, r)
		}
	}
	registry.mu.Unlock()
	slices.SortFunc(recs, func(a, b *record) int { return a.order - b.order })
	var names []string
	for _, r := range recs {
		f := &file{rec: r, path: r.path, handed: r.source()}
		w.seen[r] = f
		if f.path == "" {
			f.path = w.find(r, f.handed)
			if f.path == "" {
				f.missing = true
				w.say(fmt.Sprintf("duet reload: %s (loaded from an fs.FS) is not on disk under %s: not watched (set app.Options.ReloadDir to the directory it was embedded from)",
					r.fsPath, strings.Join(w.candidates(r), ", ")))
				continue
			}
		}
		// A symbolic link is watched where it is and where it points: an
		// editor writes the file it points to.
		paths := []string{f.path}
		if real, err := filepath.EvalSymlinks(f.path); err == nil && real != f.path {
			paths = append(paths, real)
		}
		watched := false
		for _, p := range paths {
			dir := filepath.Dir(p)
			if !w.dirs[dir] {
				if err := w.fw.Add(dir); err != nil {
					w.say(fmt.Sprintf("duet reload: %s: not watched: %v", p, err))
					continue
				}
				w.dirs[dir] = true
			}
			if old := w.files[p]; old != nil && old != f {
				// A module loaded again from the same file: the new
				// record replaces the old one, and its pending change.
				delete(w.pending, old)
				delete(w.saved, old)
			}
			w.files[p] = f
			watched = true
		}
		if !watched {
			f.missing = true
			continue
		}
		names = append(names, f.path)
	}
	if len(names) > 0 {
		w.say("duet reload: watching " + strings.Join(names, ", "))
	}
}

// candidates are the directories where a LoadFS file may be.
func (w *Watcher) candidates(r *record) []string {
	if w.cfg.Dir != "" {
		return []string{w.cfg.Dir}
	}
	out := slices.Clone(r.dirs)
	if w.cfg.Guess != "" {
		out = append(out, w.cfg.Guess)
	}
	return slices.Compact(out)
}

// find looks for a LoadFS file on disk: at its fs path under each
// candidate directory, the file that holds the source loaded (the binary
// was built from it); failing that, a file of the same name and source
// below a candidate (an fs.Sub of the embedded files). A file that holds
// something else is taken only from the directory the program named
// (app.Options.ReloadDir): a guessed directory may since be another's (a
// build directory removed, and made again by another user), and a reload
// runs what the file holds.
func (w *Watcher) find(r *record, src string) string {
	for _, dir := range w.candidates(r) {
		p := filepath.Join(dir, filepath.FromSlash(r.fsPath))
		b, err := readSource(p)
		if err != nil {
			continue
		}
		if string(b) == src || w.cfg.Dir != "" {
			return p
		}
	}
	for _, dir := range w.candidates(r) {
		if p := search(dir, filepath.Base(r.fsPath), src); p != "" {
			return p
		}
	}
	return ""
}

// search finds below dir (a few levels, skipping hidden directories) a file
// called base that holds src.
func search(dir, base, src string) string {
	const depth = 4
	var found string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			if p != dir && (strings.HasPrefix(d.Name(), ".") || strings.Count(rel, string(filepath.Separator)) >= depth) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != base {
			return nil
		}
		if b, err := readSource(p); err == nil && bytes.Equal(b, []byte(src)) {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

func (w *Watcher) event(ev fsnotify.Event) {
	name := filepath.Clean(ev.Name)
	if w.dirs[name] && ev.Has(fsnotify.Remove|fsnotify.Rename) {
		// The directory itself went (fsnotify drops its watch): its files
		// are no longer watched.
		delete(w.dirs, name)
		var gone []string
		for p, f := range w.files {
			if filepath.Dir(p) == name {
				delete(w.files, p)
				delete(w.pending, f)
				delete(w.saved, f)
				f.missing = true
				gone = append(gone, filepath.Base(p))
			}
		}
		slices.Sort(gone)
		gone = slices.Compact(gone)
		w.say(fmt.Sprintf("duet reload: %s was removed: %s no longer watched (restart to watch again)", name, strings.Join(gone, ", ")))
		return
	}
	f := w.files[name]
	if f == nil || !ev.Has(fsnotify.Create|fsnotify.Write|fsnotify.Remove|fsnotify.Rename) {
		return
	}
	now := time.Now()
	if _, ok := w.pending[f]; !ok {
		w.saved[f] = now
	}
	w.pending[f] = now.Add(w.cfg.Debounce)
	w.arm()
}

func (w *Watcher) arm() {
	var next time.Time
	for _, t := range w.pending {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	w.timer.Stop()
	if !next.IsZero() {
		w.timer.Reset(max(time.Until(next), 0))
	}
}

// fire reloads the files that have been quiet long enough, in load order.
func (w *Watcher) fire() {
	now := time.Now()
	var due []*file
	for f, t := range w.pending {
		if !t.After(now) {
			delete(w.pending, f)
			due = append(due, f)
		}
	}
	slices.SortFunc(due, func(a, b *file) int { return a.rec.order - b.rec.order })
	for _, f := range due {
		saved := w.saved[f]
		delete(w.saved, f)
		b, err := readSource(f.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if !f.missing {
				f.missing = true
				w.say(fmt.Sprintf("duet reload: %s: the file is gone; the code loaded from it keeps running", filepath.Base(f.path)))
			}
			continue
		case err != nil:
			w.say(fmt.Sprintf("duet reload: %s: %v", filepath.Base(f.path), err))
			continue
		}
		f.missing = false
		src := string(b)
		if src == "" {
			continue // truncated by a save under way: its write comes next
		}
		if src == f.handed {
			continue // saved again as it was, or a second event of one save
		}
		f.handed = src
		r, path := f.rec, f.path
		eventloop.Invoke(func() {
			if w.closed.Load() {
				return
			}
			run(r, path, src, saved, w.cfg.Out)
		})
	}
	w.arm()
}
