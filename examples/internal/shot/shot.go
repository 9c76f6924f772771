// Package shot saves screenshots of the X display for the examples'
// headless runs (under Xvfb), with ImageMagick's import.
package shot

import (
	"fmt"
	"image"
	_ "image/png" // decode what import writes
	"os"
	"os/exec"
)

// Take saves the whole X screen to path (a .png).
func Take(path string) error {
	out, err := exec.Command("import", "-window", "root", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("screenshot: %v: %s", err, out)
	}
	return nil
}

// Blank reports whether the PNG at path is a single colour (nothing drawn).
func Blank(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return false, err
	}
	b := img.Bounds()
	first := img.At(b.Min.X, b.Min.Y)
	r0, g0, b0, _ := first.RGBA()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bb, _ := img.At(x, y).RGBA()
			if r != r0 || g != g0 || bb != b0 {
				return false, nil
			}
		}
	}
	return true, nil
}
