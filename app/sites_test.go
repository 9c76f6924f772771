package app_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/diag"
)

// nextLine is the site of the line after its call.
func nextLine() string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("app/%s:%d", file[len(file)-len("sites_test.go"):], line+1)
}

func init() {
	// app.Main makes the activate handler on the program's behalf, two
	// calls deep in app: it is sited at the program's call of Main.
	children["main-site"] = func() int {
		os.Args = prog
		fmt.Println("main at", nextLine())
		return app.Main(app.Options{ID: "org.duet.MainSite", NonUnique: true}, func(a *app.App) error {
			for _, l := range diag.CallbackCensus.Read() {
				if l.Name == "activate_handler" {
					fmt.Println("activate_handler at", l.Site)
				}
			}
			a.Quit()
			return nil
		})
	}
}

// The callbacks app makes for the program's funcs (an action's, a signal
// handler's) are sited at the program's call in the census, with
// provenance on or off, not in app/app.go: the func Python calls is app's
// own wrapper, and the call made it on the UI thread, through the loop.
func TestCallbacksAppMakesAreSitedAtTheCall(t *testing.T) {
	a, err := app.New(app.Options{ID: "org.duet.Sites", NonUnique: true})
	require.NoError(t, err)
	for _, provenance := range []bool{true, false} {
		t.Run(fmt.Sprintf("provenance=%v", provenance), func(t *testing.T) {
			forensics.SetProvenance(provenance)
			defer forensics.SetProvenance(true) // looptest's default
			action := fmt.Sprintf("probe_%v", provenance)
			want := map[string]string{}
			want["action_"+action] = nextLine()
			require.NoError(t, a.AddAction(action, nil, func() {}))
			want["startup_handler"] = nextLine()
			require.NoError(t, a.OnStartup(func() {}))
			want["command_line_handler"] = nextLine()
			require.NoError(t, a.OnCommandLine(func([]string) int { return 0 }))
			sites := map[string][]string{}
			for _, l := range diag.CallbackCensus.Read() {
				sites[l.Name] = append(sites[l.Name], l.Site)
			}
			for name, site := range want {
				assert.Contains(t, sites[name], site, "%s: %v", name, sites[name])
			}
		})
	}
}

func TestMainsActivateHandlerIsSitedAtTheCallOfMain(t *testing.T) {
	for _, env := range []string{"DUET_DEBUG=", "DUET_DEBUG=callbacks"} {
		r := runChild(t, "main-site", nil, env)
		require.Equal(t, 0, r.code, "stderr:\n%s", r.err)
		at, ok := strings.CutPrefix(strings.Split(r.out, "\n")[0], "main at ")
		require.True(t, ok, "stdout:\n%s", r.out)
		assert.Contains(t, r.out, "activate_handler at "+at+"\n", "%s", env)
	}
}
