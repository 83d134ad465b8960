package procfs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// maxCPU bounds the CPU numbers ParseCPUList accepts (the kernel's NR_CPUS is at most 8192).
const maxCPU = 1 << 13

// ParseCPUList parses a kernel CPU list such as /sys/devices/system/cpu/online's "0-3,8,10-11"
// into the CPU numbers, in order.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a >= maxCPU {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b >= maxCPU {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		if len(cpus) > 0 && a <= cpus[len(cpus)-1] {
			return nil, fmt.Errorf("bad CPU list %q: not in order", s)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// OnlineCPUs lists the online CPUs (/sys/devices/system/cpu/online).
func OnlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	cpus, err := ParseCPUList(string(b))
	if err != nil {
		return nil, fmt.Errorf("/sys/devices/system/cpu/online: %w", err)
	}
	if len(cpus) == 0 {
		return nil, errors.New("/sys/devices/system/cpu/online: no CPU")
	}
	return cpus, nil
}
