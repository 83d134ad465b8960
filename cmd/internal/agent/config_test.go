package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseAgentConfig(t *testing.T) {
	in := `# node agent
window: 30s
otlp: http://collector:4318
otlp: "http://other:4318"   
pyroscope-header: 'X-Scope-OrgID=team a'
dir: /var/lib/jvmkit # comment

freq: 49
`
	got, err := parseAgentConfig([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"window", "30s"}, {"otlp", "http://collector:4318"}, {"otlp", "http://other:4318"},
		{"pyroscope-header", "X-Scope-OrgID=team a"}, {"dir", "/var/lib/jvmkit"}, {"freq", "49"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"window 30s", ": x", "a b: c"} {
		if _, err := parseAgentConfig([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseAgentConfig(f *testing.F) {
	f.Add([]byte("window: 30s\notlp: 'http://a:1'\n# c\n"))
	f.Add([]byte("a:\n:b\n\"x\": y"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kvs, err := parseAgentConfig(b)
		if err != nil {
			return
		}
		for _, kv := range kvs {
			if kv[0] == "" {
				t.Fatalf("empty name from %q", b)
			}
		}
	})
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"16MiB": 16 << 20, "256M": 256 << 20, "1GiB": 1 << 30, "4096": 4096, "512 K": 512 << 10, "0": 0} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1.5M", "99999999999GiB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q): no error", bad)
		}
	}
}

// Flags on the command line win over the file; the file fills the rest.
func TestApplyAgentConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.conf")
	if err := os.WriteFile(path, []byte("window: 30s\nfreq: 49\notlp: http://a:4318\notlp: http://b:4318\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := Command(os.Stdout, os.Stderr)
	if err := cmd.ParseFlags([]string{"--freq", "19"}); err != nil {
		t.Fatal(err)
	}
	if err := applyAgentConfig(cmd.Flags(), path); err != nil {
		t.Fatal(err)
	}
	w, _ := cmd.Flags().GetDuration("window")
	f, _ := cmd.Flags().GetInt("freq")
	o, _ := cmd.Flags().GetStringArray("otlp")
	if w != 30*time.Second || f != 19 || len(o) != 2 {
		t.Errorf("window %v freq %d otlp %q", w, f, o)
	}
	if err := os.WriteFile(path, []byte("nosuch: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := applyAgentConfig(Command(os.Stdout, os.Stderr).Flags(), path); err == nil {
		t.Error("unknown setting accepted")
	}
}
