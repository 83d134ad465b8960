package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
)

func main() {
	// `go test -exec 'testsummary wrap'` runs each test binary through us (see wrap).
	if len(os.Args) > 1 && os.Args[1] == "wrap" {
		if len(os.Args) < 3 {
			fmt.Fprintln(os.Stderr, "usage: testsummary wrap TEST-BINARY [FLAGS]")
			os.Exit(2)
		}
		os.Exit(wrap(os.Args[2:]))
	}
	jsonOut := flag.String("json", "", "also write the raw test2json events to this file")
	slowest := flag.Int("slowest", 15, "list this many of the slowest tests")
	cpuLog := flag.String("cpu", "", "CPU log: go test's -exec 'testsummary wrap' appends each test binary's CPU time to it")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testsummary [-json FILE] [-cpu FILE] [-slowest N] -- go test -json [-exec 'testsummary wrap'] [flags] [packages]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(flag.Args(), *jsonOut, *cpuLog, *slowest))
}

func run(argv []string, jsonOut, cpuLog string, slowest int) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	if cpuLog != "" {
		// The wrappers run in the packages' directories.
		abs, err := filepath.Abs(cpuLog)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
			return 1
		}
		cpuLog = abs
		if err := os.WriteFile(cpuLog, nil, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
			return 1
		}
		cmd.Env = append(os.Environ(), cpuLogEnv+"="+cpuLog)
	}
	cmd.Stdin = os.Stdin
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		return 1
	}
	var events io.Reader = stdout
	if jsonOut != "" {
		f, err := os.Create(jsonOut)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
			return 1
		}
		defer f.Close()
		events = io.TeeReader(stdout, f)
	}
	// Ctrl-C reaches go test through the terminal's process group; we only keep reading until it ends.
	signal.Ignore(os.Interrupt) // SIGINT, named so that this builds on every OS
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		return 1
	}
	s := newSummary(os.Stdout)
	readErr := s.read(events)
	waitErr := cmd.Wait()
	if cpuLog != "" {
		records, err := readCPULog(cpuLog)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		}
		reportCPU(os.Stdout, records, slowest)
	}
	s.report(slowest)

	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(waitErr, &exitErr):
		code = exitErr.ExitCode()
	case waitErr != nil:
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", waitErr)
		code = 1
	}
	if readErr != nil {
		fmt.Fprintf(os.Stderr, "testsummary: read events: %v\n", readErr)
	}
	if code == 0 && (s.failed() || readErr != nil) {
		code = 1
	}
	return code
}
