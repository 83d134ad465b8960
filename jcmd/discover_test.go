package jcmd_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jcmd"
)

func TestMain(m *testing.M) { testutil.Main(m) }

func TestCommandFromArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"java", "-cp", "/x", "Main", "a", "b"}, "Main a b"},
		{[]string{"java", "-Xmx1g", "-jar", "app.jar", "--port=1"}, "app.jar --port=1"},
		{[]string{"java", "--add-opens", "java.base/java.lang=ALL-UNNAMED", "-m", "mod/com.x.Main"}, "mod/com.x.Main"},
		{[]string{"java", "--module=mod/Main", "x"}, "mod/Main x"},
		{[]string{"java", "-classpath", "a:b", "-Dx=y", "pkg.Main"}, "pkg.Main"},
		{[]string{"/opt/app/bin/launcher"}, "launcher"},
		{[]string{"java", "-jar"}, ""},
		{nil, ""},
	} {
		if got := jcmd.CommandFromArgs(tc.args); got != tc.want {
			t.Errorf("CommandFromArgs(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestJVMOptions(t *testing.T) {
	for _, tc := range []struct {
		args, want []string
	}{
		{[]string{"java", "-cp", "/x", "-Dotel.service.name=a", "Main", "-Dnot=mine"}, []string{"-cp", "/x", "-Dotel.service.name=a"}},
		{[]string{"java", "-Xmx1g", "-jar", "app.jar", "-Dx=y"}, []string{"-Xmx1g"}},
		{[]string{"java", "-Da=b", "--module=mod/Main", "x"}, []string{"-Da=b"}},
		{[]string{"java", "-Da=b"}, []string{"-Da=b"}},
		{nil, nil},
	} {
		if diff := cmp.Diff(tc.want, jcmd.JVMOptions(tc.args), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("JVMOptions(%q) (-want +got):\n%s", tc.args, diff)
		}
	}
}

func TestListAndSelect(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	plain := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	ns := testutil.StartJVM(t, jdk, testutil.JVMOptions{Namespace: true, UID: 65534, GID: 65534})
	noPerf := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:-UsePerfData"}})
	disabled := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:+DisableAttachMechanism"}})
	ctx := context.Background()
	jvms, err := jcmd.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byPid := map[int]jcmd.JVM{}
	for _, j := range jvms {
		byPid[j.PID] = j
	}
	for _, tc := range []struct {
		j          *testutil.JVM
		container  bool
		attachable bool
		perfdata   bool
		uid        int
	}{
		{plain, false, true, true, 0},
		{ns, true, true, true, 65534},
		{noPerf, false, true, false, 0},
		{disabled, false, false, true, 0},
	} {
		got, ok := byPid[tc.j.PID]
		if !ok {
			t.Errorf("List misses JVM %d", tc.j.PID)
			continue
		}
		if got.MainClass != "Sleeper" || !got.HotSpot || got.NSPID != tc.j.NSPID || got.UID != tc.uid ||
			got.Container != tc.container || got.Attachable != tc.attachable || (got.PerfData != "") != tc.perfdata {
			t.Errorf("JVM %d: %+v", tc.j.PID, got)
		}
	}
	if _, ok := byPid[os.Getpid()]; ok {
		t.Error("List includes the test process")
	}

	pids, err := jcmd.Select(ctx, "Sleeper")
	if err != nil {
		t.Fatal(err)
	}
	sel := map[int]bool{}
	for _, p := range pids {
		sel[p] = true
	}
	if !sel[plain.PID] || !sel[ns.PID] || !sel[noPerf.PID] || sel[disabled.PID] {
		t.Errorf("Select(Sleeper) = %v", pids)
	}
	if p, err := jcmd.Select(ctx, strconv.Itoa(disabled.PID)); err != nil || len(p) != 1 {
		t.Errorf("a numeric pid is used as is: %v %v", p, err)
	}
	if _, err := jcmd.Select(ctx, "NoSuchMainClass"); !errors.Is(err, jcmd.ErrNoMatch) {
		t.Errorf("no match: %v", err)
	}
	if _, err := jcmd.Inspect(ctx, os.Getpid()); !errors.Is(err, attach.ErrNotJVM) {
		t.Errorf("Inspect(self): %v", err)
	}
}
