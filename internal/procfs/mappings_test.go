package procfs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMaps(t *testing.T) {
	in := `55d0c0000000-55d0c0001000 r--p 00000000 fe:00 315100                     /usr/lib/jvm/java-17-openjdk-amd64/bin/java
7ff710051000-7ff710da4000 r-xp 00251000 fe:00 315152                     /usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so
7ff720000000-7ff720021000 rw-p 00000000 00:00 0 
7ffd1c3b4000-7ffd1c3d5000 rw-p 00000000 00:00 0                          [stack]
7f0000000000-7f0000001000 r--p 00000000 103:1a 12                         /opt/my app/lib x.so (deleted)
`
	got, err := ParseMaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{0x55d0c0000000, 0x55d0c0001000, "r--p", 0, 0xfe, 0, 315100, "/usr/lib/jvm/java-17-openjdk-amd64/bin/java", false},
		{0x7ff710051000, 0x7ff710da4000, "r-xp", 0x251000, 0xfe, 0, 315152, "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so", false},
		{0x7ff720000000, 0x7ff720021000, "rw-p", 0, 0, 0, 0, "", false},
		{0x7ffd1c3b4000, 0x7ffd1c3d5000, "rw-p", 0, 0, 0, 0, "[stack]", false},
		{0x7f0000000000, 0x7f0000001000, "r--p", 0, 0x103, 0x1a, 12, "/opt/my app/lib x.so", true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
	for _, bad := range []string{"zz-1 r--p 0 0 0\n", "1-2 r--p zz 00:00 0\n", "1 r--p 0 00:00 0\n", "1-2 r--p 0 0000 0\n", "1-2 r--p 0 0g:00 0\n"} {
		if _, err := ParseMaps(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseMaps(%q): no error", bad)
		}
	}
}

func FuzzParseMaps(f *testing.F) {
	f.Add("7ff710051000-7ff710da4000 r-xp 00251000 fe:00 315152   /usr/lib/libjvm.so\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseMaps(strings.NewReader(s))
	})
}
