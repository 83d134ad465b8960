//go:build linux && amd64

package unwind

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// javaFrame is a Java frame as both sides print it: method and line (-1: none).
type javaFrame struct {
	Name string
	Line int
}

func (f javaFrame) String() string { return f.Name + ":" + strconv.Itoa(f.Line) }

var (
	jhsdbThread = regexp.MustCompile(`^"(.*)" #`)
	jhsdbFrame  = regexp.MustCompile(`^ - ([^ (]+)\(.*\) @bci=-?\d+(?:, line=(-?\d+))?`)
	// Hidden classes (JDK 15+: "Name+0x<address>", which jstack prints as "Name/0x<address>") and JDK 11's
	// VM-anonymous ones ("Name/<hash>", which jhsdb prints as "Name"): compared without the suffix.
	hiddenClass = regexp.MustCompile(`[+/](0x[0-9a-f]+|[0-9]+\b)`)
)

// parseJhsdb reads `jhsdb jstack` output: the Java frames of each thread, by name.
func parseJhsdb(out string) map[string][]javaFrame {
	stacks := map[string][]javaFrame{}
	var cur string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := jhsdbThread.FindStringSubmatch(line); m != nil {
			cur = m[1]
			stacks[cur] = []javaFrame{}
			continue
		}
		if m := jhsdbFrame.FindStringSubmatch(line); m != nil && cur != "" {
			l := -1
			if m[2] != "" {
				l, _ = strconv.Atoi(m[2])
			}
			stacks[cur] = append(stacks[cur], javaFrame{hiddenClass.ReplaceAllString(m[1], ""), l})
		}
	}
	return stacks
}

// ourFrames are a stack's Java frames as jhsdb prints them, and how many of the first belong to the
// top compiled frame (its inlined methods and itself; 0 if the top Java frame is not compiled).
func ourFrames(st Stack) (out []javaFrame, topGroup int) {
	out, topGroup, _ = ourFramesTop(st)
	return out, topGroup
}

// ourFramesTop is ourFrames, and how the stack starts: in a stub (the top compiled frame is then at a
// return address, where jhsdb, whose frame guess skips the stub, applies its rule for a top pc), in an
// interpreted frame (whose line we take from the live bcp in r13, jhsdb from the frame's bcp slot,
// written only at calls), or elsewhere.
// topBCI is the bytecode index of the stack's first Java frame (-1 when unknown).
func topBCI(st Stack) int {
	for _, f := range st.Frames {
		if f.Java() {
			return f.BCI
		}
	}
	return -1
}

func ourFramesTop(st Stack) (out []javaFrame, topGroup int, top FrameType) {
	for _, f := range st.Frames {
		if f.Type != Kernel && f.Type != Native {
			top = f.Type
			break
		}
	}
	first := true
	for _, f := range st.Frames {
		if !f.Java() {
			continue
		}
		line := f.Line
		if f.Line < 0 {
			line = -1
		}
		out = append(out, javaFrame{hiddenClass.ReplaceAllString(f.Name, ""), line})
		if first {
			switch f.Type {
			case Inlined:
				topGroup++
				continue
			case Compiled:
				topGroup++
			}
			first = false
		}
	}
	return out, topGroup, top
}

// unwindShapes are the stacks the Unwind workload's threads can have, root first, each frame followed
// by ";": a thread is anywhere in its loop, so the deeper frames are optional.
var unwindShapes = map[string]*regexp.Regexp{
	"uw-deep":  regexp.MustCompile(`^(jl.Thread.runWith;)?Unwind\$\$Lambda[^;]*\.run;Unwind\.lambda\$main\$0;(Unwind\.deep;(Unwind\.rec;){0,22}(Unwind\.leaf;)?)?$`),
	"uw-mixed": regexp.MustCompile(`^(jl.Thread.runWith;)?Unwind\$\$Lambda[^;]*\.run;Unwind\.lambda\$main\$1;(Unwind\.mixedOuter;(Unwind\.interp;(Unwind\.mixedInner;)?)?)?$`),
	"uw-sha":   regexp.MustCompile(`^(jl.Thread.runWith;)?Unwind\$\$Lambda[^;]*\.run;Unwind\.sha;((java|sun|jdk|jl)\.[^;]+;)*$`),
	"uw-mega":  regexp.MustCompile(`^(jl.Thread.runWith;)?Unwind\$\$Lambda[^;]*\.run;Unwind\.lambda\$main\$2;(Unwind\.mega;(Unwind\$[A-E]\.area;)?)?$`),
	"uw-sleep": regexp.MustCompile(`^(jl.Thread.runWith;)?Unwind\$\$Lambda[^;]*\.run;Unwind\.sleep;(java\.lang\.Thread\.[^;]+;)+$`),
}

// hasShape reports whether Java frames (leaf first) fit the thread's shape below java.lang.Thread.run.
func hasShape(thread string, frames []javaFrame) bool {
	if len(frames) == 0 || frames[len(frames)-1].Name != "java.lang.Thread.run" {
		return false
	}
	var b strings.Builder
	for i := len(frames) - 2; i >= 0; i-- {
		b.WriteString(strings.Replace(frames[i].Name, "java.lang.", "jl.", 1) + ";")
	}
	s := strings.ReplaceAll(b.String(), "jl.Thread.runWith", "jl.Thread.runWith")
	s = strings.NewReplacer("jl.Thread.sleep", "java.lang.Thread.sleep").Replace(s)
	return unwindShapes[thread].MatchString(s)
}

// TestStoppedThreadsMatchJhsdb stops the whole JVM (SIGSTOP), walks the stacks of the workload's
// threads, has `jhsdb jstack --pid` print the same stopped state (it attaches to a stopped process and
// leaves it stopped), and compares method names and lines. Every one of our stacks must be complete
// and have its thread's known shape; where jhsdb's stack has that shape too, the two must be equal
// below the top compiled frame.
func TestStoppedThreadsMatchJhsdb(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: what this checks does not depend on the machine's load
		jhsdb := jdk.Bin("jhsdb")
		if _, err := os.Stat(jhsdb); err != nil {
			testutil.Skipf(t, "%s has no jhsdb: %v", jdk, err)
		}
		jvm, w := liveJVM(t, jdk, "Unwind", unwindArgs)
		// The top compiled frame named as jhsdb names it (see Options.NearTop).
		w, err := New(w.JVM(), Options{Native: NewProcessSymbols(jvm.PID), Kernel: &KernelSymbols{}, NearTop: true})
		if err != nil {
			t.Fatal(err)
		}
		threads := workloadThreads(t, w, "uw-")
		if len(threads) != len(unwindShapes) {
			t.Fatalf("workload threads: %v", threads)
		}
		const rounds = 3
		var broken, stacks, compared, equal, saEmpty, saWrong, frames, equalFrames, topExact, topGroups, entering int
		for round := range rounds {
			cont := testutil.StopProcess(t, jvm.PID)
			ours := map[string]Stack{}
			for name, th := range threads {
				st, err := stopAndWalk(t, w, th)
				if err != nil {
					cont()
					t.Fatalf("%s: %v", name, err)
				}
				ours[name] = st
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			out, err := exec.CommandContext(ctx, jhsdb, "jstack", "--pid", strconv.Itoa(jvm.PID)).CombinedOutput()
			cancel()
			cont()
			if err != nil {
				t.Fatalf("jhsdb jstack: %v\n%s", err, out)
			}
			theirs := parseJhsdb(string(out))
			for name, st := range ours {
				stacks++
				mine, group, top := ourFramesTop(st)
				if !st.Complete {
					// Rare (about 0.2% of stops, see TestStoppedThreadsComplete): one is tolerated.
					broken++
					t.Logf("round %d: %s: walk ended early (%v): %v", round, name, st.Reason, mine)
					continue
				}
				if !hasShape(name, mine) {
					t.Errorf("round %d: %s: frames %v do not have the thread's shape", round, name, mine)
					continue
				}
				ref, ok := theirs[name]
				switch {
				case !ok:
					t.Errorf("round %d: jhsdb printed no thread %q", round, name)
					continue
				case len(ref) == 0:
					// SA's frame guess (X86CurrentFrameGuess) found no frame: a pc in a stub.
					saEmpty++
					t.Logf("round %d: %s: jhsdb printed no frames; ours %v", round, name, mine)
					continue
				case !hasShape(name, ref):
					saWrong++
					t.Logf("round %d: %s: jhsdb's stack is impossible for this thread: %v; ours %v", round, name, ref, mine)
					continue
				}
				// A thread stopped in a call's entry (an i2c adapter, a method's entry before its frame
				// is built, an interpreted frame just built, at bci 0) is shown by us in the callee, at no
				// line yet or at its first bytecode, and by jhsdb still in the caller (seen on JDK 25:
				// mixedInner:-1 above interp:80; on JDK 11: interp:79, its bci 0, above mixedOuter:72):
				// the rest must then agree.
				if group == 0 && len(mine) == len(ref)+1 && (mine[0].Line == -1 || topBCI(st) == 0) && fmt.Sprint(mine[1:]) == fmt.Sprint(ref) {
					entering++
					t.Logf("round %d: %s: ours is entering %s, jhsdb's is still in its caller; the rest is equal", round, name, mine[0].Name)
					mine = mine[1:]
				}
				compared++
				// Below the top compiled frame both must agree exactly; the top compiled frame too, as
				// the walker uses jhsdb's rule for it here (Options.NearTop).
				below := mine[group:]
				n := len(below)
				same := len(ref) >= n && (group > 0 || len(ref) == n)
				for i := 0; same && i < n; i++ {
					frames++
					r := ref[len(ref)-n+i]
					if i == 0 && group == 0 && top == Interpreted && below[i].Name == r.Name {
						r.Line = below[i].Line // jhsdb's line is from the bcp last spilled, ours the live one
					}
					if below[i] == r {
						equalFrames++
					} else {
						same = false
					}
				}
				if group > 0 && top != Stub {
					topGroups++
					if len(ref) == len(mine) && fmt.Sprint(mine[:group]) == fmt.Sprint(ref[:group]) {
						topExact++
					} else {
						t.Errorf("round %d: %s: top compiled frame differs:\n ours:  %v\n jhsdb: %v", round, name, mine, ref)
					}
				}
				if same {
					equal++
				} else {
					t.Errorf("round %d: %s differs:\n ours:  %v (top compiled group %d)\n jhsdb: %v", round, name, mine, group, ref)
				}
			}
		}
		if broken > 1 {
			t.Errorf("%d of %d walks ended early", broken, stacks)
		}
		t.Logf("%s: %d stacks walked, %d ended early, the others of the expected shape; jhsdb: %d comparable, %d equal below the top compiled frame (%d/%d frames), top compiled frame exactly equal in %d/%d; jhsdb printed no frames for %d and an impossible stack for %d; %d entering a call (ours in the callee)",
			jdk.Name(), stacks, broken, compared, equal, equalFrames, frames, topExact, topGroups, saEmpty, saWrong, entering)
	})
}
