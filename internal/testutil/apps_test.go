//go:build linux

package testutil_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestApps starts each real application on JDK 17 under a short load: it serves (the pages compile and
// render, the JDBC client's statements succeed), Tomcat runs as user tomcat, and everything is gone after
// the test.
func TestApps(t *testing.T) {
	jdk := testutil.JDK17(t)
	testutil.MustHaveRoot(t)
	for _, kind := range testutil.Apps {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel() // two applications at a time: most of a start is waiting for the port
			app := testutil.StartApp(t, kind, jdk, testutil.AppOptions{})
			st, err := procfs.Default.Status(app.PID)
			if err != nil {
				t.Fatal(err)
			}
			if st.EUID() != app.UID {
				t.Errorf("%s runs as uid %d, want %d", kind, st.EUID(), app.UID)
			}
			if kind == testutil.Tomcat && app.UID == 0 {
				t.Errorf("Tomcat runs as root")
			}
			if kind.HTTP() {
				resp, err := http.Get(app.URL("/work.jsp?n=7"))
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<h1>7 items, total ") {
					t.Fatalf("GET work.jsp: %s\n%s", resp.Status, body)
				}
			}
			r := app.StartLoad(t, testutil.LoadOptions{Duration: 3 * time.Second}).Wait(t)
			t.Logf("%s on %s: %d requests, %d errors in 3 s", kind, jdk.Name(), r.Requests, r.Errors)
			if r.Requests == 0 || r.Errors != 0 {
				t.Errorf("load: %d requests, %d errors\n%s", r.Requests, r.Errors, r.Output)
			}
		})
	}
}
