package gjcmd

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/jvmkit/jvmkit/jcmd"
)

// encodingJSON is what --json printed before jsonout.go: the oracle.
func encodingJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func checkJSON(t *testing.T, results []*result, jvms []jcmd.JVM) {
	t.Helper()
	want := encodingJSON(t, struct {
		Schema  string    `json:"schema"`
		Results []*result `json:"results"`
	}{"jvmkit.gjcmd/v1", results})
	if got := resultsJSON(results); !bytes.Equal(got, want) {
		t.Errorf("resultsJSON:\n%s\nencoding/json:\n%s", got, want)
	}
	want = encodingJSON(t, struct {
		Schema string     `json:"schema"`
		JVMs   []jcmd.JVM `json:"jvms"`
	}{"jvmkit.gjcmd.list/v1", jvms})
	if got := jvmsJSON(jvms); !bytes.Equal(got, want) {
		t.Errorf("jvmsJSON:\n%s\nencoding/json:\n%s", got, want)
	}
}

func jsonCase(s string, n int) ([]*result, []jcmd.JVM) {
	st := n - 1
	r := &result{PID: n, Command: s, Output: s + "\n", Exit: n % 7}
	if n%2 == 0 {
		r.Status = &st
		r.Error = s
		r.Notes = []string{s, "note"}
		r.Files = []writtenFile{{Path: s, HostPath: "/proc/1/root" + s}, {Path: "p", HostPath: "h", CopiedTo: s, Size: int64(n) << 33}}
	}
	j := jcmd.JVM{PID: n, NSPID: -n, UID: 65534, MainClass: s, Command: s + " x", HotSpot: n%2 == 0, Attachable: n%3 == 0, Container: n%5 == 0}
	if n%2 == 1 {
		j.PerfData = s
	}
	return []*result{r, {PID: 1}}, []jcmd.JVM{j, {}}
}

func TestJSONLikeEncodingJSON(t *testing.T) {
	checkJSON(t, nil, nil)
	checkJSON(t, []*result{}, []jcmd.JVM{})
	for n, s := range []string{"", "VM.version", "a\"b\\c\n\r\t\b\f\x00\x1f\x7f", "<&>", "é ☃ 𝄞", "\u2028\u2029", "\xff\xfe bad \xc3", "/tmp/x.jfr"} {
		r, j := jsonCase(s, n)
		checkJSON(t, r, j)
	}
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{"", "x", "<\u2028\xff\"\\\n>", "JDK 17.0.15\n"} {
		f.Add(s, 2)
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		r, j := jsonCase(s, n)
		checkJSON(t, r, j)
	})
}
