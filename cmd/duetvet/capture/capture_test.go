package capture_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/duet-gtk/duet/cmd/duetvet/capture"
)

func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), capture.Analyzer, "a")
}
