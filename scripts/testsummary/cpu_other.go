//go:build !linux

package main

import (
	"fmt"
	"os"
	"os/exec"
)

// wrap runs the test binary: CPU accounting needs Linux's cgroups.
func wrap(argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		return 1
	}
	return 0
}
