package procfs_test

import (
	"slices"
	"testing"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		bad  bool
	}{
		{"0-1\n", []int{0, 1}, false},
		{"0", []int{0}, false},
		{"0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}, false},
		{"", nil, false},
		{"3-1", nil, true},
		{"1,0", nil, true},
		{"0-x", nil, true},
		{"-1", nil, true},
		{"0-99999", nil, true},
	}
	for _, c := range cases {
		got, err := procfs.ParseCPUList(c.in)
		if (err != nil) != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestOnlineCPUs(t *testing.T) {
	cpus, err := procfs.OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) == 0 || cpus[0] < 0 {
		t.Fatalf("OnlineCPUs() = %v", cpus)
	}
}

func FuzzParseCPUList(f *testing.F) {
	f.Add("0-1\n")
	f.Add("0-3,8,10-11")
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := procfs.ParseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) > 1<<13 {
			t.Fatalf("%d CPUs", len(cpus))
		}
		for i := 1; i < len(cpus); i++ {
			if cpus[i] <= cpus[i-1] {
				t.Fatalf("not increasing: %v", cpus)
			}
		}
	})
}
