package cliutil

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jvmkit/jvmkit/jcmd"
)

// CompletionDeadline bounds what a completion may cost: a shell waits for it at every TAB. Listing JVMs
// reads /proc and hsperfdata; a JVM's commands take an attach and a `help` (a few milliseconds, or the
// listener's start on the first attach).
const CompletionDeadline = 2 * time.Second

// The shell completion protocol of cobra's generated scripts (bash, zsh, fish), which every tool
// answers: the scripts run `tool __complete ARGS... WORD` (or __completeNoDesc) at a TAB and read one
// candidate a line, a tab before its description, then ":" and a directive, a sum of these bits.
const (
	CompleteRequest       = "__complete"
	CompleteRequestNoDesc = "__completeNoDesc"
	CompFiles             = 0 // the shell also completes file names
	CompNoSpace           = 2 // no space after the candidate ("name=")
	CompNoFiles           = 4 // no file names
)

// WriteCompletions answers a completion request: the candidates ("word" or "word\tdescription"),
// without their descriptions when noDesc, then the directive, on w; on diag (stderr, which the scripts
// show only when debugging) the directive's name, as cobra's own answer has it.
func WriteCompletions(w, diag io.Writer, comps []string, directive int, noDesc bool) {
	for _, c := range comps {
		if noDesc {
			c, _, _ = strings.Cut(c, "\t")
		}
		fmt.Fprintln(w, c)
	}
	fmt.Fprintf(w, ":%d\n", directive)
	name := "ShellCompDirectiveDefault"
	switch {
	case directive&CompNoFiles != 0 && directive&CompNoSpace != 0:
		name = "ShellCompDirectiveNoSpace, ShellCompDirectiveNoFileComp"
	case directive&CompNoFiles != 0:
		name = "ShellCompDirectiveNoFileComp"
	case directive&CompNoSpace != 0:
		name = "ShellCompDirectiveNoSpace"
	}
	fmt.Fprintf(diag, "Completion ended with directive: %s\n", name)
}

// CompleteJVMs lists the attachable HotSpot JVMs whose pid starts with prefix, each with its main class
// after a tab (shells show it as a description).
func CompleteJVMs(ctx context.Context, prefix string) []string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CompletionDeadline)
	defer cancel()
	jvms, err := jcmd.List(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, j := range jvms {
		pid := strconv.Itoa(j.PID)
		if !j.HotSpot || !j.Attachable || !strings.HasPrefix(pid, prefix) {
			continue
		}
		desc := j.MainClass
		if desc == "" {
			desc = "java"
		}
		if j.Container {
			desc += " (container)"
		}
		out = append(out, pid+"\t"+desc)
	}
	return out
}
