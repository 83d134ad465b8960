package testutil

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// StartApp starts an application of the given kind on jdk and waits until it serves: the HTTP applications
// until their index page returns the instance's token (the JSP compiler has run by then), H2 until it
// listens. It skips the test (fails it under CI) when the package is not installed or the JDK is too old
// for the application.
//
// Each instance gets a fresh directory under the work directory and a free port on 127.0.0.1; nothing of
// the system's own service (configuration under /etc, /var/lib, /var/log) is used or changed. Jetty runs as
// root, Tomcat as user tomcat (setpriv), H2 as root.
func StartApp(t testing.TB, kind AppKind, jdk JDK, opts AppOptions) *App {
	t.Helper()
	return StartApps(t, AppSpec{Kind: kind, JDK: jdk, Options: opts})[0]
}

// StartApps starts several applications side by side, as [StartApp] starts one, and waits until all
// serve: on a loaded machine a JVM's start-up takes seconds of waiting that several can share.
func StartApps(t testing.TB, specs ...AppSpec) []*App {
	t.Helper()
	apps := make([]*App, len(specs))
	javas := make([]string, len(specs))
	for i, sp := range specs {
		apps[i], javas[i] = launchApp(t, sp.Kind, sp.JDK, sp.Options)
	}
	for i, a := range apps {
		a.awaitStart(t, javas[i])
	}
	return apps
}

// launchApp prepares an application's instance and starts its JVM without waiting for it.
func launchApp(t testing.TB, kind AppKind, jdk JDK, opts AppOptions) (*App, string) {
	t.Helper()
	MustHaveApp(t, kind)
	if jdk.Feature < kind.MinFeature() {
		Skipf(t, "%s needs JDK %d or later, not %s", kind, kind.MinFeature(), jdk)
	}
	a := &App{Kind: kind, Token: randomToken(t), Base: newRunDir(t, string(kind)+"-*")}
	// Registered before the JVM's cleanup, so it runs after the JVM is gone.
	t.Cleanup(func() { _ = os.RemoveAll(a.Base) })
	a.Tmp = filepath.Join(a.Base, "tmp")
	if err := os.Mkdir(a.Tmp, 0o755); err != nil {
		t.Fatalf("start %s: %v", kind, err)
	}
	a.Port = freePort(t)

	jvm := JVMOptions{Dir: a.Base}
	jvm.JVMArgs = append(jvm.JVMArgs, opts.JVMArgs...)
	if !hasXmx(opts.JVMArgs) {
		jvm.JVMArgs = append(jvm.JVMArgs, "-Xmx256m")
	}
	jvm.JVMArgs = append(jvm.JVMArgs, "-Djava.io.tmpdir="+a.Tmp, "-D"+appTokenKey+"="+a.Token)
	if opts.GCLog {
		a.GCLog = filepath.Join(a.Tmp, "gc.log")
		jvm.JVMArgs = append(jvm.JVMArgs, "-Xlog:gc*:file="+a.GCLog+":"+GCLogDecorations)
	}
	var err error
	switch kind {
	case Jetty:
		err = a.setUpJetty(&jvm)
	case Tomcat:
		err = a.setUpTomcat(&jvm)
	case H2:
		err = a.setUpH2(&jvm)
	default:
		t.Fatalf("start app: unknown kind %q", kind)
	}
	if err != nil {
		t.Fatalf("start %s: %v", kind, err)
	}
	if a.UID != 0 {
		if err := chownTree(a.Base, a.UID, a.GID); err != nil {
			t.Fatalf("start %s: %v", kind, err)
		}
	}
	var java string
	a.JVM, java = launchJVM(t, jdk, jvm)
	return a, java
}

// MustHaveApp skips the test (fails it under CI) unless the application's package is installed.
func MustHaveApp(t testing.TB, kind AppKind) {
	t.Helper()
	var need []string
	switch kind {
	case Jetty:
		need = []string{filepath.Join(jettyHome, "start.jar"), filepath.Join(jettyHome, "lib", "apache-jsp")}
	case Tomcat:
		need = []string{filepath.Join(tomcatHome, "bin", "bootstrap.jar"), filepath.Join(tomcatHome, "etc", "web.xml")}
		if _, err := user.Lookup(tomcatUser); err != nil {
			Skipf(t, "test needs the user %s that the %s package makes: %v", tomcatUser, kind.Package(), err)
		}
	case H2:
		need = []string{h2Jar}
	}
	for _, path := range need {
		if _, err := os.Stat(path); err != nil {
			Skipf(t, "test needs %s (apt-get install %s): %v", kind, kind.Package(), err)
		}
	}
	if kind.HTTP() {
		MustHaveTool(t, "wrk")
	}
}

func (a *App) setUpJetty(jvm *JVMOptions) error {
	if err := a.copyWebApp(filepath.Join(a.Base, "webapps", "root")); err != nil {
		return err
	}
	// start.jar runs Jetty in this JVM (no --exec: a forked JVM would not be the one the test watches);
	// jetty.base is the instance's directory, so no start.ini or configuration of the system's is read.
	jvm.ClassPath = filepath.Join(jettyHome, "start.jar")
	jvm.Main = "org.eclipse.jetty.start.Main"
	jvm.Args = []string{
		"jetty.home=" + jettyHome, "jetty.base=" + a.Base,
		"--module=http,jsp,deploy",
		"jetty.http.host=127.0.0.1", "jetty.http.port=" + strconv.Itoa(a.Port),
	}
	jvm.Ready = a.httpReady
	return nil
}

// tomcatServer is CATALINA_BASE/conf/server.xml: one HTTP connector on loopback, no shutdown port (the
// test stops Tomcat by signal), the application as ROOT, no auto-deployment.
const tomcatServer = `<?xml version="1.0" encoding="UTF-8"?>
<Server port="-1" shutdown="SHUTDOWN">
  <Service name="Catalina">
    <Connector address="127.0.0.1" port="%d" protocol="HTTP/1.1" connectionTimeout="20000"/>
    <Engine name="Catalina" defaultHost="localhost">
      <Host name="localhost" appBase="webapps" unpackWARs="false" autoDeploy="false"/>
    </Engine>
  </Service>
</Server>
`

// tomcatProperties is CATALINA_BASE/conf/catalina.properties: the class loaders of Debian's file, without
// scanning every jar for TLDs at start-up (seconds on a loaded machine; the application has no tag library).
const tomcatProperties = `common.loader="${catalina.base}/lib","${catalina.base}/lib/*.jar","${catalina.home}/lib","${catalina.home}/lib/*.jar"
server.loader=
shared.loader=
tomcat.util.scan.StandardJarScanFilter.jarsToSkip=*.jar
`

func (a *App) setUpTomcat(jvm *JVMOptions) error {
	u, err := user.Lookup(tomcatUser)
	if err != nil {
		return err
	}
	if a.UID, err = strconv.Atoi(u.Uid); err != nil {
		return err
	}
	if a.GID, err = strconv.Atoi(u.Gid); err != nil {
		return err
	}
	if err := a.copyWebApp(filepath.Join(a.Base, "webapps", "ROOT")); err != nil {
		return err
	}
	for _, d := range []string{"conf", "logs", "work"} {
		if err := os.MkdirAll(filepath.Join(a.Base, d), 0o755); err != nil {
			return err
		}
	}
	webXML, err := os.ReadFile(filepath.Join(tomcatHome, "etc", "web.xml")) // the default and JSP servlets
	if err != nil {
		return err
	}
	files := map[string]string{
		"server.xml":          fmt.Sprintf(tomcatServer, a.Port),
		"catalina.properties": tomcatProperties,
		"web.xml":             string(webXML),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(a.Base, "conf", name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	jvm.UID, jvm.GID = a.UID, a.GID
	// What catalina.sh passes: JULI as log manager (its output goes to stderr, no log files), the
	// packages Tomcat's leak prevention opens on JDK 9+, and the two directories.
	jvm.JVMArgs = append(jvm.JVMArgs,
		"-Djava.util.logging.manager=org.apache.juli.ClassLoaderLogManager",
		"--add-opens=java.base/java.lang=ALL-UNNAMED",
		"--add-opens=java.base/java.io=ALL-UNNAMED",
		"--add-opens=java.base/java.util=ALL-UNNAMED",
		"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
		"--add-opens=java.rmi/sun.rmi.transport=ALL-UNNAMED",
		"-Dcatalina.home="+tomcatHome, "-Dcatalina.base="+a.Base,
	)
	jvm.ClassPath = filepath.Join(tomcatHome, "bin", "bootstrap.jar") + ":" + filepath.Join(tomcatHome, "bin", "tomcat-juli.jar")
	jvm.Main = "org.apache.catalina.startup.Bootstrap"
	jvm.Args = []string{"start"}
	jvm.Ready = a.httpReady
	return nil
}

func (a *App) setUpH2(jvm *JVMOptions) error {
	if err := os.Mkdir(filepath.Join(a.Base, "db"), 0o755); err != nil {
		return err
	}
	// h2.bindAddress keeps the server on loopback (it binds every address otherwise, refusing remote
	// clients only after accepting them). -ifNotExists lets the client create its database in baseDir.
	jvm.JVMArgs = append(jvm.JVMArgs, "-Dh2.bindAddress=127.0.0.1")
	jvm.ClassPath = h2Jar
	jvm.Main = "org.h2.tools.Server"
	jvm.Args = []string{"-tcp", "-tcpPort", strconv.Itoa(a.Port), "-baseDir", filepath.Join(a.Base, "db"), "-ifNotExists"}
	a.jdbcURL = fmt.Sprintf("jdbc:h2:tcp://127.0.0.1:%d/jvmkit", a.Port)
	jvm.Ready = func(j *JVM) error {
		// Printed after the server socket is bound: a port someone else took makes the server fail instead.
		if !strings.Contains(j.Stdout(), "TCP server running at") {
			return errors.New("H2 has not said that its TCP server runs")
		}
		return nil
	}
	return nil
}

// httpReady asks the application's index page for the instance's token.
func (a *App) httpReady(*JVM) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // the first request compiles the JSP
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL("/index.jsp"), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return err
	}
	if want := "jvmkit-app " + a.Token; resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %s, want %q in %q", a.URL("/index.jsp"), resp.Status, want, body)
	}
	return nil
}

// copyWebApp copies the harness's web application (apps/webapp next to this file) to dir.
func (a *App) copyWebApp(dir string) error {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return errors.New("find the web application: no caller information")
	}
	src := filepath.Join(filepath.Dir(file), appDataDir, "webapp")
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
}

// chownTree gives dir and everything under it to uid:gid, without following links.
func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

func randomToken(t testing.TB) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random token: %v", err)
	}
	return hex.EncodeToString(b[:])
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago. Another process may take it before
// the application binds it: the application then fails to start (H2) or does not serve the instance's
// token (HTTP), and the test fails with that in its message rather than talking to a stranger.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Load is a running load generator started by [App.StartLoad].
type Load struct {
	kind AppKind
	wrk  *Background // wrk
	jvm  *JVM        // the JDBC client

	stopped atomic.Bool
}

// StartLoad starts the application's load generator for a bounded run: wrk on the pages of an HTTP
// application, the JDBC client (workload H2Load, on JDK 17) on H2. The run ends by itself after
// opts.Duration; a cleanup stops it earlier if the test ends first.
func (a *App) StartLoad(t testing.TB, opts LoadOptions) *Load {
	t.Helper()
	if opts.Duration <= 0 {
		opts.Duration = 10 * time.Second
	}
	l := &Load{kind: a.Kind}
	if a.Kind == H2 {
		if opts.Connections <= 0 {
			opts.Connections = 2
		}
		jdk := JDK17(t)
		cp := Compile(t, jdk, "H2Load") + ":" + h2Jar
		secs := int((opts.Duration + time.Second - 1) / time.Second)
		l.jvm = StartJVM(t, jdk, JVMOptions{
			Main:      "H2Load",
			ClassPath: cp,
			// A client that takes little of the two cores: C1 only, a small serial heap.
			JVMArgs: []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx64m"},
			Args: []string{a.jdbcURL, strconv.Itoa(secs), strconv.Itoa(opts.Connections),
				strconv.FormatFloat(opts.Rate, 'f', -1, 64)},
		})
		return l
	}
	if opts.Connections <= 0 {
		opts.Connections = 8
	}
	script := filepath.Join(newRunDir(t, "wrk-*"), "requests.lua")
	if err := os.WriteFile(script, []byte(wrkScript), 0o644); err != nil {
		t.Fatalf("start load: %v", err)
	}
	secs := int((opts.Duration + time.Second - 1) / time.Second)
	// One wrk thread: the application gets the rest of the two cores. SIGINT makes wrk print its report.
	l.wrk = StartBackground(t, unix.SIGINT, MustHaveTool(t, "wrk"), "-t1", "-c"+strconv.Itoa(opts.Connections),
		"-d"+strconv.Itoa(secs)+"s", "--timeout", "10s", "-s", script, a.URL("/"))
	return l
}

// Wait waits for the load run to end, by itself or by [Load.Stop], and returns what it did. It fails the
// test if the generator failed or did not end within five minutes.
func (l *Load) Wait(t testing.TB) LoadResult {
	t.Helper()
	var done <-chan struct{}
	if l.jvm != nil {
		done = l.jvm.done
	} else {
		done = l.wrk.Done()
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		l.Stop()
		t.Fatalf("load generator for %s did not end", l.kind)
	}
	// Stopped early, the generators exit by the signal, after their report.
	if l.jvm != nil {
		r, err := parseH2Load(l.jvm.Stdout() + l.jvm.Stderr())
		if err != nil || (l.jvm.waitErr != nil && !l.stopped.Load()) {
			t.Fatalf("JDBC client: %v, %v\nstdout:\n%s\nstderr:\n%s", l.jvm.waitErr, err, l.jvm.Stdout(), l.jvm.Stderr())
		}
		return r
	}
	r, err := parseWrk(l.wrk.Stdout.String())
	if err != nil || (l.wrk.Err() != nil && !l.stopped.Load()) {
		t.Fatalf("wrk: %v, %v\n%s%s", l.wrk.Err(), err, l.wrk.Stdout.String(), l.wrk.Stderr.String())
	}
	return r
}

// Stop ends the load run early (wrk by SIGINT, the JDBC client by SIGTERM; both print their report on
// the way out, which [Load.Wait] then reads). It is idempotent; the programs' own cleanups stop them too.
func (l *Load) Stop() {
	l.stopped.Store(true)
	if l.jvm != nil {
		l.jvm.Stop()
		return
	}
	l.wrk.Stop()
}
