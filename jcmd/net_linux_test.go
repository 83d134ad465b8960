package jcmd_test

import (
	"context"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestListeningTCPDebugging starts JDWP on demand in a JDK 17 JVM listening on 127.0.0.1:0 (JDK 24
// removed onjcmd=y; JDK 25 refuses it at startup). The JVM reports the configured port, 0; the real one
// shows as a new listening socket, where a JDWP handshake is answered.
func TestListeningTCPDebugging(t *testing.T) {
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{
		"-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,onjcmd=y,address=127.0.0.1:0",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before, err := procfs.Default.ListeningTCP(j.PID)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 0 {
		t.Fatalf("JVM listens before debugging starts: %v", before)
	}
	vm := dialVM(t, ctx, j.PID)
	out, err := vm.Jcmd(ctx, "VM.start_java_debugging")
	if err != nil || !strings.Contains(out, "127.0.0.1:0") {
		t.Fatalf("VM.start_java_debugging: %q, %v", out, err)
	}
	var fresh []procfs.Endpoint
	for deadline := time.Now().Add(10 * time.Second); len(fresh) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		after, err := procfs.Default.ListeningTCP(j.PID)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range after {
			if !slices.Contains(before, a) {
				fresh = append(fresh, a)
			}
		}
	}
	if len(fresh) != 1 || !fresh[0].Is4 || [4]byte(fresh[0].IP[:4]) != [4]byte{127, 0, 0, 1} || fresh[0].Port == 0 {
		t.Fatalf("new listening sockets %v, want one on 127.0.0.1", fresh)
	}
	// The agent prints the port on the JVM's stdout, which a client of a remote JVM cannot see.
	if want := "Listening for transport dt_socket at address: " + strconv.Itoa(int(fresh[0].Port)); !strings.Contains(j.Stdout(), want) {
		t.Errorf("stdout %q lacks %q", j.Stdout(), want)
	}

	c, err := net.DialTimeout("tcp", fresh[0].String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	const handshake = "JDWP-Handshake"
	if _, err := io.WriteString(c, handshake); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, len(handshake))
	if _, err := io.ReadFull(c, reply); err != nil || string(reply) != handshake {
		t.Fatalf("handshake reply %q, %v", reply, err)
	}
}
