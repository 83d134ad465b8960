package flame

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// svgFrameXML is a frame of a rendered graph, read back.
type svgFrameXML struct {
	s, n, d int64
	title   string
	fill    string
	label   string
	x, w    float64
}

// readSVG parses a graph with encoding/xml (strictly: it must be well-formed) and returns its frames.
func readSVG(t *testing.T, b []byte) []svgFrameXML {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var (
		frames   []svgFrameXML
		inFrames bool
		cur      *svgFrameXML
		text     strings.Builder
		stack    []string
	)
	attr := func(se xml.StartElement, name string) string {
		for _, a := range se.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	num := func(s string) int64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("bad number %q: %v", s, err)
		}
		return v
	}
	flt := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("bad number %q: %v", s, err)
		}
		return v
	}
	sawScript := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok.Name.Local)
			text.Reset()
			switch {
			case tok.Name.Local == "g" && attr(tok, "id") == "frames":
				inFrames = true
			case tok.Name.Local == "g" && inFrames:
				cur = &svgFrameXML{s: num(attr(tok, "data-s")), n: num(attr(tok, "data-n")), d: num(attr(tok, "data-d"))}
			case tok.Name.Local == "rect" && cur != nil:
				cur.fill, cur.x, cur.w = attr(tok, "fill"), flt(attr(tok, "x")), flt(attr(tok, "width"))
			case tok.Name.Local == "script":
				sawScript = true
			}
		case xml.CharData:
			text.Write(tok)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
			switch {
			case tok.Name.Local == "title" && cur != nil:
				cur.title = text.String()
			case tok.Name.Local == "text" && cur != nil:
				cur.label = text.String()
			case tok.Name.Local == "g" && cur != nil:
				frames = append(frames, *cur)
				cur = nil
			case tok.Name.Local == "g" && inFrames:
				inFrames = false
			}
		}
	}
	if !sawScript {
		t.Error("no script")
	}
	return frames
}

// checkFrames checks that every frame has a title with its count and share, that callees fit in their
// callers, and that the root holds the total. It returns the self counts by path of labels.
func checkFrames(t *testing.T, frames []svgFrameXML, total int64) map[string]int64 {
	t.Helper()
	if len(frames) == 0 || frames[0].d != 0 || frames[0].n != total || frames[0].s != 0 {
		t.Fatalf("first frame %+v is not the root with the total %d", frames[0], total)
	}
	self := make(map[string]int64)
	var path []svgFrameXML // callers of the current frame, root first
	for i, f := range frames {
		lines := strings.Split(f.title, "\n")
		if len(lines) < 2 || !strings.HasSuffix(lines[1], "%)") {
			t.Errorf("frame %d: title %q has no count and share", i, f.title)
		}
		if f.n <= 0 || f.fill == "" || f.w < 0 {
			t.Errorf("frame %d: %+v", i, f)
		}
		for len(path) > 0 && path[len(path)-1].d >= f.d {
			path = path[:len(path)-1]
		}
		if f.d > 0 {
			if len(path) == 0 || path[len(path)-1].d != f.d-1 {
				t.Fatalf("frame %d (%q) has no caller", i, lines[0])
			}
			p := path[len(path)-1]
			if f.s < p.s || f.s+f.n > p.s+p.n {
				t.Errorf("frame %d (%q) [%d,+%d) outside its caller [%d,+%d)", i, lines[0], f.s, f.n, p.s, p.n)
			}
		}
		path = append(path, f)
		var names []string
		for _, p := range path[1:] {
			names = append(names, strings.Split(p.title, "\n")[0])
		}
		self[strings.Join(names, ";")] += f.n
		if len(path) > 1 {
			parent := path[:len(path)-1]
			var pn []string
			for _, p := range parent[1:] {
				pn = append(pn, strings.Split(p.title, "\n")[0])
			}
			self[strings.Join(pn, ";")] -= f.n
		}
	}
	for k, v := range self {
		if v < 0 {
			t.Errorf("callees of %q add up to more than it", k)
		}
		if v == 0 {
			delete(self, k)
		}
	}
	return self
}

// oddFolded has names that need escaping or cleaning in XML.
func oddFolded() *Folded {
	return &Folded{Stacks: []Stack{
		{Frames: []string{"java", `a<b>&"c'd`, "]]><!-- -->"}, Count: 3},
		{Frames: []string{"java", `a<b>&"c'd`, "tab\there\rcr\x00nul\x1bbad\xffutf8\uFFFE"}, Count: 2},
		{Frames: []string{"java", "Lcom/x/Y;::m_[j]", "std::vector<int, std::allocator<int> >::push_back"}, Count: 5},
		{Frames: []string{"java", "Lcom/x/Y;::m_[j]", "inl_[i]"}, Count: 1},
		{Frames: []string{"java", "sys_write_[k]"}, Count: 4},
		{Frames: []string{"Ünïcode ☃", "日本語"}, Count: 7},
		{Frames: []string{"java", ""}, Count: 1},
	}}
}

func TestWriteSVG(t *testing.T) {
	inputs := map[string]*Folded{"odd": oddFolded()}
	for _, name := range []string{"jvm-unfold.all.folded", "jvm-fields.plain.folded", "synthetic.all-addrs.folded"} {
		f, err := os.Open(filepath.Join("testdata", "fold", name))
		if err != nil {
			t.Fatal(err)
		}
		inputs[name], err = ParseFolded(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, folded := range inputs {
		for _, reverse := range []bool{false, true} {
			t.Run(name+"/reverse="+strconv.FormatBool(reverse), func(t *testing.T) {
				opts := SVGOptions{Title: `T<&>"'`, Subtitle: "sub & <sub>", Reverse: reverse, MinWidth: 1e-9}
				var a, b bytes.Buffer
				if err := WriteSVG(&a, folded, opts); err != nil {
					t.Fatal(err)
				}
				if err := WriteSVG(&b, folded, opts); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Fatal("two renderings differ")
				}
				frames := readSVG(t, a.Bytes())
				self := checkFrames(t, frames, folded.Total())
				// With nothing merged, the graph holds exactly the input's stacks.
				want := make(map[string]int64)
				for _, s := range folded.Stacks {
					var names []string
					for _, fr := range s.Frames {
						_, l := classify(fr)
						names = append(names, sanitizeLabel(l))
					}
					want[strings.Join(names, ";")] += s.Count
				}
				if diff := cmp.Diff(want, self); diff != "" {
					t.Errorf("stacks in the graph (-input +graph):\n%s", diff)
				}
			})
		}
	}
}

func TestWriteSVGKinds(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSVG(&buf, oddFolded(), SVGOptions{MinWidth: 1e-9}); err != nil {
		t.Fatal(err)
	}
	fills := make(map[string]string)
	kinds := make(map[string]string)
	for _, f := range readSVG(t, buf.Bytes()) {
		lines := strings.Split(f.title, "\n")
		fills[lines[0]] = f.fill
		if len(lines) > 2 {
			kinds[lines[0]] = lines[2]
		}
	}
	for label, kind := range map[string]string{
		"Lcom/x/Y;::m": "Java",
		"inl":          "Java, inlined",
		"sys_write":    "kernel",
		"std::vector<int, std::allocator<int> >::push_back": "C++",
		"java": "native",
	} {
		if kinds[label] != kind {
			t.Errorf("%q: kind %q, want %q", label, kinds[label], kind)
		}
	}
	if fills["all"] == "" || fills["Lcom/x/Y;::m"] == fills["sys_write"] {
		t.Errorf("fills: %v", fills)
	}
}

func TestClassify(t *testing.T) {
	for name, want := range map[string]kind{
		"void Burn.strings":                           kindJava,
		"java.lang.String java.lang.String.substring": kindJava,
		"int[] a.B$C.<init>":                          kindJava,
		"java/util/HashMap:::putVal":                  kindJava,
		"com/example/Shop:::price":                    kindJava,
		"Ljava/lang/String;::hashCode":                kindJava,
		"java.util.HashMap::putVal":                   kindJava,
		"Interpreter_[j]":                             kindJava,
		"double Burn.f_[i]":                           kindInlined,
		"do_syscall_64_[k]":                           kindKernel,
		"JavaCalls::call_helper":                      kindCpp,
		"start_thread":                                kindNative,
		"net/http.(*Client).Do":                       kindNative,
		"Interpreter":                                 kindNative,
		"[libjvm.so]":                                 kindNative,
	} {
		if got, _ := classify(name); got != want {
			t.Errorf("classify(%q) = %s, want %s", name, kindNames[got], kindNames[want])
		}
	}
}

// TestWriteSVGMerge checks that narrow frames are merged into one block per caller and the counts
// still add up.
func TestWriteSVGMerge(t *testing.T) {
	f := &Folded{Stacks: []Stack{{Frames: []string{"main", "big"}, Count: 100000}}}
	for i := range 50 {
		f.Stacks = append(f.Stacks, Stack{Frames: []string{"main", "small" + strconv.Itoa(i), "leaf"}, Count: 1})
	}
	f.Stacks = append(f.Stacks, Stack{Frames: []string{"tiny"}, Count: 1})
	var buf bytes.Buffer
	if err := WriteSVG(&buf, f, SVGOptions{Width: 600, MinWidth: 0.5}); err != nil {
		t.Fatal(err)
	}
	frames := readSVG(t, buf.Bytes())
	checkFrames(t, frames, f.Total())
	var labels []string
	for _, fr := range frames {
		labels = append(labels, strings.Split(fr.title, "\n")[0])
	}
	// "tiny" alone is narrower than 0.5 px (and 0.1): left out. The 50 small frames (0.29 px together)
	// too, but not with the default of 0.1 px.
	if diff := cmp.Diff([]string{"all", "main", "big"}, labels); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	buf.Reset()
	if err := WriteSVG(&buf, f, SVGOptions{Width: 600}); err != nil {
		t.Fatal(err)
	}
	frames = readSVG(t, buf.Bytes())
	labels = labels[:0]
	for _, fr := range frames {
		labels = append(labels, strings.Split(fr.title, "\n")[0])
	}
	if diff := cmp.Diff([]string{"all", "main", "big", "50 narrow frames"}, labels); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	self := checkFrames(t, frames, f.Total())
	if self["main;50 narrow frames"] != 50 {
		t.Errorf("merged block: %v", self)
	}
}

// TestWriteSVGUnit: the counts are named by SVGOptions.Unit when given (an allocation profile's bytes).
func TestWriteSVGUnit(t *testing.T) {
	f := &Folded{Stacks: []Stack{{Frames: []string{"main", "byte[]"}, Count: 2048}}}
	var b bytes.Buffer
	if err := WriteSVG(&b, f, SVGOptions{Unit: "bytes"}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "2,048 bytes") || !strings.Contains(out, "<!-- jvmkit flame: bytes total 2048 -->") || strings.Contains(out, " samples") {
		t.Errorf("an SVG of bytes does not name them bytes:\n%.600s", out)
	}
}

func TestWriteSVGEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSVG(&buf, &Folded{}, SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	if frames := readSVG(t, buf.Bytes()); len(frames) != 0 {
		t.Errorf("%d frames", len(frames))
	}
	if err := WriteSVG(&buf, &Folded{}, SVGOptions{Width: 50}); err == nil {
		t.Error("width 50 accepted")
	}
}

func TestFitLabel(t *testing.T) {
	for _, c := range []struct {
		label string
		w     float64
		want  string
	}{
		{"JavaCalls::call_helper", 1000, "JavaCalls::call_helper"},
		{"JavaCalls::call_helper", 6 + 10*charWidth, "JavaCall.."},
		{"日本語日本語", 6 + 4*charWidth, "日本.."},
		{"abc", 6 + 2*charWidth, ""},
	} {
		if got := fitLabel(c.label, c.w); got != c.want {
			t.Errorf("fitLabel(%q, %v) = %q, want %q", c.label, c.w, got, c.want)
		}
	}
}
