package capture_test

import (
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/duet-gtk/duet/cmd/duetvet/capture"
)

func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), capture.Analyzer, "a")
}

// widgets.Widget with its object in a field and a CallMethod of its own:
// connecting through that method is a connect site too.
func TestAnalyzerWidgetWithObjectField(t *testing.T) {
	analysistest.Run(t, filepath.Join(analysistest.TestData(), "fieldwidget"), capture.Analyzer, "b")
}
