package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"

	"golang.org/x/sys/unix"
)

func main() {
	jsonOut := flag.String("json", "", "also write the raw test2json events to this file")
	slowest := flag.Int("slowest", 15, "list this many of the slowest tests")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testsummary [-json FILE] [-slowest N] -- go test -json [flags] [packages]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(flag.Args(), *jsonOut, *slowest))
}

func run(argv []string, jsonOut string, slowest int) int {
	cmd := exec.Command(argv[0], argv[1:]...)
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
	signal.Ignore(unix.SIGINT)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		return 1
	}
	s := newSummary(os.Stdout)
	readErr := s.read(events)
	waitErr := cmd.Wait()
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
