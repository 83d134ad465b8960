package testutil

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// AppKind names a real application that the harness runs from a distribution's packages.
type AppKind string

// The applications, each from its Debian package (bookworm).
const (
	Jetty  AppKind = "jetty"  // Jetty 9.4 (jetty9): a JSP page and a page with work in it
	Tomcat AppKind = "tomcat" // Tomcat 10.1 (tomcat10): the same pages, as user tomcat
	H2     AppKind = "h2"     // H2 2.1 (libh2-java): a TCP server driven by a JDBC client
)

// Apps lists every application kind, in the order the tests run them.
var Apps = []AppKind{Jetty, Tomcat, H2}

// Where the packages install the applications.
const (
	jettyHome   = "/usr/share/jetty9"
	tomcatHome  = "/usr/share/tomcat10"
	h2Jar       = "/usr/share/java/h2.jar"
	tomcatUser  = "tomcat" // made by the tomcat10 package
	appDataDir  = "apps"   // next to this file: the web application both servlet containers serve
	appTokenKey = "jvmkit.token"
)

// Package returns the Debian package that installs the application.
func (k AppKind) Package() string {
	switch k {
	case Jetty:
		return "jetty9"
	case Tomcat:
		return "tomcat10"
	case H2:
		return "libh2-java"
	}
	return ""
}

// HTTP reports whether the application serves HTTP (and is loaded with wrk).
func (k AppKind) HTTP() bool { return k == Jetty || k == Tomcat }

// MinFeature is the oldest JDK feature release the application runs on.
func (k AppKind) MinFeature() int {
	switch k {
	case Tomcat:
		return 11 // Tomcat 10.1 needs Java 11
	default:
		return 8
	}
}

// AppOptions describe how StartApp runs an application.
type AppOptions struct {
	// JVMArgs come before the application's own options: -XX:+UseParallelGC, -XX:+DTraceAllocProbes,
	// -Xlog:gc*:file=... (the default heap is -Xmx256m unless JVMArgs set -Xmx).
	JVMArgs []string
	// GCLog makes the JVM log its collections with -Xlog:gc* to App.GCLog, decorated as [ParseGCLog] reads.
	GCLog bool
}

// AppSpec is one application for StartApps.
type AppSpec struct {
	Kind    AppKind
	JDK     JDK
	Options AppOptions
}

// LoadOptions describe a bounded run of the application's load generator.
type LoadOptions struct {
	Duration    time.Duration // how long the load runs; default 10 s
	Connections int           // HTTP connections (wrk -c) or JDBC connections; default 8 (HTTP), 2 (JDBC)
	// Rate, for H2, is the JDBC client's steps per second, all connections together (0: as fast as it
	// can). Two instances compared under one rate do the same work per second however fast each could go.
	Rate float64
}

// LoadResult is what a load run did.
type LoadResult struct {
	Requests int64  // HTTP requests or JDBC operations (one order with its queries) completed
	Errors   int64  // socket errors, non-2xx responses or failed statements
	Output   string // the generator's own report
}

// App is a real application started by [StartApp]: a JVM serving on Port on 127.0.0.1, with every file it
// writes under Base, stopped (by pidfd) by the test's cleanup like any [JVM].
type App struct {
	*JVM
	Kind  AppKind
	Port  int    // TCP port on 127.0.0.1
	Base  string // the instance's own directory: jetty.base, CATALINA_BASE, H2's base directory
	Tmp   string // java.io.tmpdir, writable by the JVM's user: for files the JVM is asked to write (JFR)
	UID   int    // the JVM's uid and gid (0 unless the application runs as its own user)
	GID   int
	Token string // served by the HTTP applications' index.jsp: proves that the server on Port is this one
	GCLog string // with AppOptions.GCLog: the -Xlog:gc* file

	jdbcURL string
}

// URL returns the address of a page of an HTTP application, such as a.URL("/work.jsp?n=10").
func (a *App) URL(path string) string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port)) + path
}

// JDBCURL returns the address of the H2 application's database.
func (a *App) JDBCURL() string { return a.jdbcURL }

// wrkScript rotates wrk's requests over the application's pages: mostly the page with work in it, at two
// sizes, and the plain JSP.
const wrkScript = `-- requests of the jvmkit real-application harness
local paths = {"/work.jsp?n=100", "/index.jsp", "/work.jsp?n=400", "/work.jsp?n=50"}
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end
`

var (
	wrkRequests = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)
	wrkNon2xx   = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses: (\d+)`)
	wrkSocket   = regexp.MustCompile(`(?m)^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	h2LoadOps   = regexp.MustCompile(`(?m)^ops (\d+) errors (\d+)$`)
)

// parseWrk reads wrk's report: "N requests in 10.00s, ...", and the error lines it prints only when there
// were errors. Timeouts count as errors: a request that took longer than wrk's timeout did not complete.
func parseWrk(out string) (LoadResult, error) {
	r := LoadResult{Output: out}
	m := wrkRequests.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("wrk: no request count in its report:\n%s", out)
	}
	r.Requests, _ = strconv.ParseInt(m[1], 10, 64)
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		r.Errors += n
	}
	if m := wrkSocket.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(s, 10, 64)
			r.Errors += n
		}
	}
	return r, nil
}

// parseH2Load reads the JDBC client's last line, "ops N errors M".
func parseH2Load(out string) (LoadResult, error) {
	r := LoadResult{Output: out}
	m := h2LoadOps.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("H2Load: no \"ops N errors M\" line in its output:\n%s", out)
	}
	r.Requests, _ = strconv.ParseInt(m[1], 10, 64)
	r.Errors, _ = strconv.ParseInt(m[2], 10, 64)
	return r, nil
}

// hasXmx reports whether args set the maximum heap size.
func hasXmx(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-Xmx") || strings.HasPrefix(a, "-XX:MaxHeapSize=") || strings.HasPrefix(a, "-XX:MaxRAMPercentage=") {
			return true
		}
	}
	return false
}
