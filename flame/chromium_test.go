package flame_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/flame"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

// screenshot renders the SVG at path (with a URL fragment) in headless Chromium.
func screenshot(t *testing.T, chromium, path, fragment string) image.Image {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--window-size=1200,800",
		"file://"+path+fragment)
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return img
}

// colours counts the pixels of each colour.
func colours(img image.Image) map[[3]uint8]int {
	n := make(map[[3]uint8]int)
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			n[[3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}]++
		}
	}
	return n
}

// TestSVGInChromium renders a flame graph of the real recording in Chromium and checks that it draws
// frames in several colours, and that its script runs: the search in the URL fragment paints the
// matching frames in the highlight colour (#e040e0), which no frame has otherwise.
func TestSVGInChromium(t *testing.T) {
	chromium := testutil.MustHaveTool(t, "chromium")
	f := foldedFile(t, filepath.Join("testdata", "fold", "jvm-unfold.txt"), flame.FoldOptions{Kernel: true, JIT: true})
	path := filepath.Join(t.TempDir(), "flame.svg")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := flame.WriteSVG(out, f, flame.SVGOptions{Title: "Burn", Subtitle: "jvm-unfold.txt"}); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	hit := [3]uint8{0xe0, 0x40, 0xe0}

	plain := colours(screenshot(t, chromium, path, ""))
	// Frames come in many shades; count the colours that cover a real area (not anti-aliasing).
	big := 0
	for _, n := range plain {
		if n >= 200 {
			big++
		}
	}
	if big < 8 {
		t.Errorf("only %d colours cover 200 pixels or more (of %d colours)", big, len(plain))
	}
	if plain[hit] != 0 {
		t.Errorf("%d pixels of the highlight colour before any search", plain[hit])
	}

	searched := colours(screenshot(t, chromium, path, "#s=hashCode"))
	if searched[hit] < 100 {
		t.Errorf("search: %d pixels of the highlight colour, want frames painted", searched[hit])
	}
}
