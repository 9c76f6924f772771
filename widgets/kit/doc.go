// Package kit holds duet's ready-made widgets: Python widgets shipped in
// the Go binary, each with a typed Go wrapper, and the census window.
//
// They are written the way a duet app's own Python widgets are: a Python
// class (duet_widgets.py, embedded with go:embed), loaded through package
// widgets, with a Go wrapper that duetgen generates from the class (the
// *_gen.go files: typed properties and methods, checked against the class
// as loaded) and a few methods written by hand. So the kit is also a worked
// example of widgets.LoadFS, widgets.Generated and cmd/duetgen.
//
// [LineChart] is a live line chart drawn with cairo; [LogView] a
// scrolling log. Their constructors and the generated methods are UI
// thread only (elsewhere they return an error wrapping
// eventloop.ErrNotMain); [LineChart.Push], [LogView.Log] and
// [LogView.Printf] are safe from any goroutine: values are batched into
// one Python call per loop turn.
//
// [ShowCensus] opens the census window: forensics.TakeCensus as tables
// that refresh every second, each row with its change since a mark and a
// graph of its last minute (app.Options.Census, or DUET_CENSUS=1, puts it
// on Ctrl+Shift+C).
//
// # API
//
//   - The module: [Library] (duet_widgets, shared: closing it does
//     nothing).
//   - Charts: [NewLineChart] and its [LineChart]: [LineChart.Push],
//     [LineChart.PushMany], [LineChart.Points], [LineChart.Series],
//     [LineChart.Clear], [LineChart.Title], [LineChart.SetTitle],
//     [LineChart.Unit], [LineChart.SetUnit], [LineChart.Capacity],
//     [LineChart.SetCapacity].
//   - Logs: [NewLogView] and its [LogView]: [LogView.Log], [LogView.Printf],
//     [LogView.AppendMany], [LogView.Text], [LogView.LineCount],
//     [LogView.MaxLines], [LogView.SetMaxLines].
//   - Diagnosis: [ShowCensus].
package kit
