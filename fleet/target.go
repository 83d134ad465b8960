package fleet

import (
	"net/url"
	"path"
	"strconv"
	"strings"
)

// Target is a JVM the agent profiles, with the labels a service owner searches by.
type Target struct {
	PID   int // host pid
	NSPID int // pid in the JVM's own pid namespace
	// StartTime is the process's start in clock ticks since boot: with PID it names one process
	// across pid reuse.
	StartTime uint64
	// Service is the service name: -Dotel.service.name, OTEL_SERVICE_NAME, service.name in
	// otel.resource.attributes / OTEL_RESOURCE_ATTRIBUTES, else the main class or the jar's base name.
	Service string
	// ServiceFrom says where Service came from ("otel.service.name", "OTEL_SERVICE_NAME",
	// "otel.resource.attributes", "OTEL_RESOURCE_ATTRIBUTES", "main class", "jar").
	ServiceFrom string
	MainClass   string
	Host        string
	// ContainerID, ContainerRuntime and PodUID come from the JVM's cgroup path; empty on the host.
	ContainerID      string
	ContainerRuntime string
	PodUID           string
	// JDK is the JVM's release (Abstract_VM_Version::_s_vm_release: "17.0.15+6-Debian-1deb12u1").
	JDK string
}

// Attribute is one resource attribute; Int is set for integer-valued ones (process.pid).
type Attribute struct {
	Key   string
	Value string
	Int   int64
	IsInt bool
}

// Attributes are the target's OpenTelemetry resource attributes (semantic conventions: service.name,
// host.name, process.pid, process.runtime.version, process.command, container.id, container.runtime, k8s.pod.uid), in a
// fixed order, without the empty ones.
func (t Target) Attributes() []Attribute {
	out := []Attribute{
		{Key: "service.name", Value: t.Service},
		{Key: "host.name", Value: t.Host},
		{Key: "process.pid", Int: int64(t.PID), IsInt: true},
		{Key: "process.runtime.version", Value: t.JDK},
		{Key: "process.command", Value: t.MainClass},
		{Key: "container.id", Value: t.ContainerID},
		{Key: "container.runtime", Value: t.ContainerRuntime},
		{Key: "k8s.pod.uid", Value: t.PodUID},
	}
	kept := out[:0]
	for _, a := range out {
		if a.IsInt || a.Value != "" {
			kept = append(kept, a)
		}
	}
	return kept
}

// Labels are the attributes as Prometheus-style label pairs (dots to underscores), as Pyroscope
// and file names use them: service_name, host_name, process_pid, ...
func (t Target) Labels() [][2]string {
	attrs := t.Attributes()
	out := make([][2]string, 0, len(attrs))
	for _, a := range attrs {
		v := a.Value
		if a.IsInt {
			v = strconv.FormatInt(a.Int, 10)
		}
		out = append(out, [2]string{strings.ReplaceAll(a.Key, ".", "_"), v})
	}
	return out
}

// ServiceName finds a JVM's service name as the OpenTelemetry Java agent would (a system property
// before the environment), from its launcher options (jcmd.JVMOptions of its command line), its
// environment ("KEY=value") and its main class, jar or module (jcmd.JVM.MainClass). Options in
// JAVA_TOOL_OPTIONS and JDK_JAVA_OPTIONS count as options given last: the JVM reads them too.
func ServiceName(options, environ []string, mainClass string) (name, from string) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	opts := append([]string(nil), options...)
	for _, k := range []string{"JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS"} {
		opts = append(opts, strings.Fields(env[k])...)
	}
	prop := func(name string) (string, bool) {
		v, found := "", false
		for _, o := range opts {
			if val, ok := strings.CutPrefix(o, "-D"+name+"="); ok {
				v, found = val, true // the last one wins, as in the JVM
			}
		}
		return v, found
	}
	if v, ok := prop("otel.service.name"); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), "otel.service.name"
	}
	if v := strings.TrimSpace(env["OTEL_SERVICE_NAME"]); v != "" {
		return v, "OTEL_SERVICE_NAME"
	}
	if v, ok := prop("otel.resource.attributes"); ok {
		if s := resourceService(v); s != "" {
			return s, "otel.resource.attributes"
		}
	}
	if s := resourceService(env["OTEL_RESOURCE_ATTRIBUTES"]); s != "" {
		return s, "OTEL_RESOURCE_ATTRIBUTES"
	}
	if strings.HasSuffix(mainClass, ".jar") {
		return strings.TrimSuffix(path.Base(mainClass), ".jar"), "jar"
	}
	if mainClass == "" {
		return "java", "default"
	}
	return mainClass, "main class"
}

// resourceService takes service.name from OTEL_RESOURCE_ATTRIBUTES' "key=value,key=value" form,
// whose values are percent-encoded (the OpenTelemetry SDK environment variable specification).
func resourceService(attrs string) string {
	for kv := range strings.SplitSeq(attrs, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) != "service.name" {
			continue
		}
		if dec, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
			v = dec
		}
		return strings.TrimSpace(v)
	}
	return ""
}
