package report_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html/atom"
)

// chromium finds a Chromium binary: $CHROMIUM, else chromium (Debian) or
// chromium-browser on the PATH. Without one the test is skipped, unless CI is
// set: CI must render the page for real, so there it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CHROMIUM"); bin != "" {
		return bin
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if bin, err := exec.LookPath(name); err == nil {
			return bin
		}
	}
	const msg = "chromium not found: run scripts/ensure-chromium (as root, it installs Debian's chromium) or set CHROMIUM"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set, so the browser test may not be skipped)")
	}
	t.Skip(msg)
	return ""
}

// headless runs Chromium on page with args and returns its standard output.
func headless(t *testing.T, bin, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	args = append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(),
	}, args...)
	args = append(args, (&url.URL{Scheme: "file", Path: page}).String())
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// TestRenderer_HTML_InChromium renders the page in a real browser: the
// screenshot must be a full, non-blank picture in the light and the dark
// scheme, and the DOM after the browser ran it must hold the counts and the
// entries, with the hostile ticket text inert. REPORT_SCREENSHOT=<file.png>
// keeps the light screenshot for a human to look at.
func TestRenderer_HTML_InChromium(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, []byte(renderHTML(t, sample(60))), 0o600); err != nil {
		t.Fatalf("write page: %v", err)
	}

	schemes := []struct {
		name  string
		flag  string
		light bool
	}{
		{"light", "--blink-settings=preferredColorScheme=1", true},
		{"dark", "--blink-settings=preferredColorScheme=0", false},
	}
	for _, sc := range schemes {
		t.Run("screenshot "+sc.name, func(t *testing.T) {
			t.Parallel()
			shot := filepath.Join(t.TempDir(), "shot.png")
			headless(t, bin, page, sc.flag, "--hide-scrollbars", "--screenshot="+shot, "--window-size=1200,2000")
			data, err := os.ReadFile(shot)
			if err != nil {
				t.Fatalf("read screenshot: %v", err)
			}
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("decode screenshot: %v", err)
			}
			if got := img.Bounds().Size(); got != image.Pt(1200, 2000) {
				t.Errorf("screenshot is %v, want 1200×2000", got)
			}
			bg := luma(img, 4, 4)
			if sc.light != (bg > 200) || !sc.light != (bg < 60) {
				t.Errorf("background luma %.0f, want %s", bg, map[bool]string{true: "light (> 200)", false: "dark (< 60)"}[sc.light])
			}
			// Not blank: the top of the page (heading, counts) and the bottom
			// (summaries) both have plenty of pixels unlike the background.
			for _, band := range []image.Rectangle{image.Rect(0, 0, 1200, 700), image.Rect(0, 1300, 1200, 2000)} {
				if v, ink := stats(img, band, bg); v < 50 || ink < 0.02 {
					t.Errorf("rows %d–%d look blank: luma variance %.1f, %.1f%% ink", band.Min.Y, band.Max.Y, v, ink*100)
				}
			}
			if keep := os.Getenv("REPORT_SCREENSHOT"); keep != "" && sc.light {
				if err := os.WriteFile(keep, data, 0o644); err != nil {
					t.Errorf("keep screenshot: %v", err)
				}
			}
		})
	}

	t.Run("dom", func(t *testing.T) {
		t.Parallel()
		doc := parseHTML(t, string(headless(t, bin, page, "--dump-dom")))
		body := find(doc, tag(atom.Body))
		if body == nil || attr(body, "data-pwned") != "" {
			t.Fatalf("hostile ticket text ran as script in the browser (body data-pwned=%q)", attr(body, "data-pwned"))
		}
		for name, want := range map[string]string{"tickets": "60", "summarised": "52", "refused": "3", "failed": "5", "skipped": "7", "cost": "$0.0053"} {
			if got := text(find(doc, dataCount(name))); got != want {
				t.Errorf("rendered count %s = %q, want %q", name, got, want)
			}
		}
		if got := len(findAll(find(doc, id("summaries")), class("ticket"))); got != 52 {
			t.Errorf("rendered %d summaries, want 52", got)
		}
		if got := text(find(doc, id("failed"))); !strings.Contains(got, "T-10013") || !strings.Contains(got, "the job expired before this request ran") {
			t.Errorf("rendered failures lack T-10013 and its reason: %q", got)
		}
	})
}

// luma is the brightness (0–255) of the pixel at x, y.
func luma(img image.Image, x, y int) float64 {
	r, g, b, _ := img.At(x, y).RGBA()
	return (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 257
}

// stats returns the luma variance over r (every fourth pixel each way) and the share
// of pixels that differ from the background bg by more than 24.
func stats(img image.Image, r image.Rectangle, bg float64) (variance, ink float64) {
	var n, sum, sq, inked float64
	for y := r.Min.Y; y < r.Max.Y; y += 4 {
		for x := r.Min.X; x < r.Max.X; x += 4 {
			l := luma(img, x, y)
			n++
			sum += l
			sq += l * l
			if l-bg > 24 || bg-l > 24 {
				inked++
			}
		}
	}
	mean := sum / n
	return sq/n - mean*mean, inked / n
}
