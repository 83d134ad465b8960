package flame

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SVGOptions choose what WriteSVG draws.
type SVGOptions struct {
	Title    string  // default "Flame Graph", or "Icicle Graph" with Reverse
	Subtitle string  // a second line under the title; none by default
	Width    int     // of the image in pixels; default 1200
	MinWidth float64 // frames narrower than this many pixels are merged (see WriteSVG); default 0.1
	Reverse  bool    // an icicle graph: the root at the top, callees below their callers
	// Unit names what the stacks' counts are, in the plural ("bytes", "allocations"); by default the
	// profile's: samples, or with periods nanoseconds for a clock event, else the event's name.
	Unit string
}

// Layout constants, in pixels.
const (
	svgPad      = 10   // left and right margins
	frameHeight = 16   // one stack level, with a 1-pixel gap
	labelSize   = 11   // font size of the frame labels (monospace)
	charWidth   = 6.65 // of a monospace character at labelSize, a little above most fonts' 0.6 em
)

//go:embed flame.js
var flameJS string

// node is a frame of the merged call tree.
type node struct {
	name     string
	count    int64
	children map[string]*node
	merged   int // for a block of merged narrow frames: how many
}

func buildTree(f *Folded) *node {
	root := &node{name: "all"}
	for _, s := range f.Stacks {
		root.count += s.Count
		n := root
		for _, fr := range s.Frames {
			c := n.children[fr]
			if c == nil {
				if n.children == nil {
					n.children = make(map[string]*node)
				}
				c = &node{name: fr}
				n.children[fr] = c
			}
			c.count += s.Count
			n = c
		}
	}
	return root
}

// sorted returns the children by name.
func (n *node) sorted() []*node {
	out := make([]*node, 0, len(n.children))
	for _, c := range n.children {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *node) int { return strings.Compare(a.name, b.name) })
	return out
}

// svgFrame is a frame as drawn.
type svgFrame struct {
	n            *node
	start, depth int64 // in counts from the left; level, the root 0
}

// WriteSVG draws f as a flame graph: a self-contained SVG image with an inline script, the root ("all")
// at the bottom, each frame's callees above it, left to right by name, each as wide as its count. The
// image works in any browser with no network: hover shows a frame's name, count and share, click zooms
// into a frame (click the root or "Reset zoom" to go back), "Search" or Ctrl+F highlights the frames
// whose name matches a regular expression and shows the share they cover, Escape resets both. The view
// is kept in the URL's fragment ("#z=<frame index>&s=<regexp>"), so a link or a reload shows it again.
//
// Colours tell the kind of frame, by its annotation suffix or else by its name: greens for Java (JIT
// "_[j]", Java packages, JDK perf map names such as "void Burn.strings"), aqua for inlined methods
// ("_[i]"), orange for the kernel ("_[k]"), yellow for C++ ("::"), reds for the rest. The shade comes from
// a hash of the name, so a frame keeps its colour across graphs. Labels drop the annotation suffix, the
// tooltip names the kind instead.
//
// Frames narrower than opts.MinWidth pixels are not drawn one by one: the narrow callees of a frame are
// merged into one grey block after its other callees, so the counts still add up; a block that is itself
// too narrow is left out. The output depends on f and opts only.
func WriteSVG(w io.Writer, f *Folded, opts SVGOptions) error {
	if opts.Width <= 0 {
		opts.Width = 1200
	}
	if opts.Width < 2*svgPad+100 {
		return fmt.Errorf("svg width %d: want at least %d pixels", opts.Width, 2*svgPad+100)
	}
	if opts.MinWidth <= 0 || math.IsNaN(opts.MinWidth) {
		opts.MinWidth = 0.1
	}
	if opts.Title == "" {
		opts.Title = "Flame Graph"
		if opts.Reverse {
			opts.Title = "Icicle Graph"
		}
	}
	root := buildTree(f)
	inner := float64(opts.Width - 2*svgPad)
	total := root.count
	scale := 0.0
	if total > 0 {
		scale = inner / float64(total)
	}

	// Lay out: depth-first, callees packed from the left, narrow ones merged.
	var frames []svgFrame
	var depth int64
	var walk func(n *node, start, d int64)
	walk = func(n *node, start, d int64) {
		frames = append(frames, svgFrame{n: n, start: start, depth: d})
		depth = max(depth, d+1)
		x := start
		var narrow *node
		for _, c := range n.sorted() {
			if float64(c.count)*scale < opts.MinWidth {
				if narrow == nil {
					narrow = &node{}
				}
				narrow.count += c.count
				narrow.merged++
				continue
			}
			walk(c, x, d+1)
			x += c.count
		}
		if narrow != nil && float64(narrow.count)*scale >= opts.MinWidth {
			if narrow.merged == 1 {
				narrow.name = "1 narrow frame"
			} else {
				narrow.name = strconv.Itoa(narrow.merged) + " narrow frames"
			}
			frames = append(frames, svgFrame{n: narrow, start: x, depth: d + 1})
			depth = max(depth, d+2)
		}
	}
	if total > 0 {
		walk(root, 0, 0)
	}

	top := 40
	if opts.Subtitle != "" {
		top += 18
	}
	height := top + int(depth)*frameHeight + 30
	u := unitFor(f, opts.Unit)

	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<?xml version="1.0" encoding="UTF-8" standalone="no"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n",
		opts.Width, height, opts.Width, height)
	p("<!-- jvmkit flame: %s total %s -->\n", xmlEscape(u.name), strconv.FormatInt(total, 10))
	p(`<style>
text { font-family: system-ui, "Segoe UI", Helvetica, Arial, sans-serif; fill: #222; }
#frames text { font-family: ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: %dpx; pointer-events: none; }
#frames g { cursor: pointer; }
#frames g:hover rect { stroke: #222; stroke-width: 0.7; }
#frames g.anc rect { fill-opacity: 0.5; }
#frames g.hide { display: none; }
.btn { cursor: pointer; font-size: 12px; fill: #1f4e8c; }
.btn:hover { text-decoration: underline; }
.off { visibility: hidden; }
</style>
`, labelSize)
	p(`<defs><linearGradient id="bg" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#f6f7f9"/><stop offset="1" stop-color="#e9ecf1"/></linearGradient></defs>` + "\n")
	p(`<rect width="100%%" height="100%%" fill="url(#bg)"/>` + "\n")
	p(`<text x="%d" y="26" text-anchor="middle" font-size="17" font-weight="600">%s</text>`+"\n", opts.Width/2, xmlEscape(opts.Title))
	if opts.Subtitle != "" {
		p(`<text x="%d" y="46" text-anchor="middle" font-size="12" fill="#555">%s</text>`+"\n", opts.Width/2, xmlEscape(opts.Subtitle))
	}
	p(`<text id="unzoom" class="btn off" x="%d" y="26">Reset zoom</text>`+"\n", svgPad)
	p(`<text id="search" class="btn" x="%d" y="26" text-anchor="end">Search</text>`+"\n", opts.Width-svgPad)
	p(`<text id="unsearch" class="btn off" x="%d" y="26" text-anchor="end">Reset search</text>`+"\n", opts.Width-svgPad-60)
	p(`<text id="details" x="%d" y="%d" font-size="12"> </text>`+"\n", svgPad, height-10)
	p(`<text id="matched" x="%d" y="%d" font-size="12" text-anchor="end"> </text>`+"\n", opts.Width-svgPad, height-10)
	if total == 0 {
		p(`<text x="%d" y="%d" text-anchor="middle" font-size="14" fill="#777">no samples</text>`+"\n", opts.Width/2, top+20)
	}

	p(`<g id="frames">` + "\n")
	var tip strings.Builder
	for _, fr := range frames {
		k, label := kindOther, fr.n.name
		if fr.depth > 0 && fr.n.merged == 0 {
			k, label = classify(fr.n.name)
		}
		label = sanitizeLabel(label)
		x := svgPad + float64(fr.start)*scale
		wd := float64(fr.n.count) * scale
		y := top + int(fr.depth)*frameHeight
		if !opts.Reverse {
			y = top + int(depth-1-fr.depth)*frameHeight
		}
		tip.Reset()
		tip.WriteString(label)
		tip.WriteString("\n")
		tip.WriteString(u.format(fr.n.count))
		tip.WriteString(" (")
		tip.WriteString(percent(fr.n.count, total))
		tip.WriteString(")")
		if kindNames[k] != "" {
			tip.WriteString("\n" + kindNames[k])
		}
		p(`<g data-s="%d" data-n="%d" data-d="%d"><title>%s</title><rect x="%s" y="%d" width="%s" height="%d" rx="2" fill="%s"/><text x="%s" y="%s">%s</text></g>`+"\n",
			fr.start, fr.n.count, fr.depth, xmlEscape(tip.String()),
			num(x), y, num(wd), frameHeight-1, colour(k, label),
			num(x+3), num(float64(y)+11.5), xmlEscape(fitLabel(label, wd)))
	}
	p("</g>\n")

	cfg, err := json.Marshal(map[string]any{
		"pad": svgPad, "width": inner, "total": total, "charWidth": charWidth, "hit": "#e040e0",
	})
	if err != nil {
		return err
	}
	// json.Marshal writes "<" and ">" as \u003c and \u003e, so the data cannot end the CDATA section.
	p("<script type=\"text/ecmascript\"><![CDATA[\nvar flameConfig = %s;\n%s]]></script>\n", cfg, flameJS)
	p("</svg>\n")
	return bw.Flush()
}

// fitLabel shortens a label to what fits in w pixels; flame.js does the same after zooming.
func fitLabel(label string, w float64) string {
	n := int((w - 6) / charWidth)
	if n < 3 {
		return ""
	}
	if utf8.RuneCountInString(label) <= n {
		return label
	}
	r := []rune(label)
	return string(r[:n-2]) + ".."
}

// sanitizeLabel makes a name printable on one line.
func sanitizeLabel(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, isBadXMLRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s { // invalid UTF-8 comes as utf8.RuneError
		switch {
		case r < 0x20:
			r = ' '
		case isBadXMLRune(r):
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isBadXMLRune tells runes that XML 1.0 does not allow, and tabs and line ends (labels are one line).
func isBadXMLRune(r rune) bool {
	return r < 0x20 || r >= 0xD800 && r <= 0xDFFF || r == 0xFFFE || r == 0xFFFF || r > 0x10FFFF
}

// xmlEscape escapes s for XML text and attribute values; s is valid UTF-8 with no control characters
// other than line feeds.
func xmlEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\'':
			b.WriteString("&apos;")
		case r == '\n':
			b.WriteByte('\n')
		case isBadXMLRune(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// num writes a coordinate with two decimals and no trailing zeros.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func percent(n, total int64) string {
	if total == 0 {
		return "0%"
	}
	return strconv.FormatFloat(100*float64(n)/float64(total), 'f', 2, 64) + "%"
}

// unit says how to print counts.
type unit struct {
	name string // "samples", "ns", or an event's name
	ns   bool
}

func unitFor(f *Folded, name string) unit {
	switch {
	case name != "":
		return unit{name: name}
	case !f.Period:
		return unit{name: "samples"}
	case isClockEvent(f.Event):
		return unit{name: "ns", ns: true}
	case f.Event != "":
		return unit{name: f.Event}
	}
	return unit{name: "events"}
}

// isClockEvent tells the software clock events, whose period is in nanoseconds.
func isClockEvent(e string) bool {
	e, _, _ = strings.Cut(e, ":")
	return e == "cpu-clock" || e == "task-clock"
}

func (u unit) format(n int64) string {
	if !u.ns {
		return group(n) + " " + u.name
	}
	d := float64(n)
	switch {
	case d >= 1e9:
		return strconv.FormatFloat(d/1e9, 'f', 3, 64) + " s"
	case d >= 1e6:
		return strconv.FormatFloat(d/1e6, 'f', 2, 64) + " ms"
	case d >= 1e3:
		return strconv.FormatFloat(d/1e3, 'f', 2, 64) + " µs"
	}
	return group(n) + " ns"
}

// group writes n with thousands separators.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
