// Package jcmd runs HotSpot diagnostic commands over the attach protocol and finds the JVMs on the
// machine, including those in containers, the way the JDK's jcmd launcher does but without a JVM.
//
// # Discovery
//
// [List] scans /proc for processes that map libjvm.so (HotSpot) or OpenJ9's libraries, so JVMs started
// with -XX:-UsePerfData are found too, then reads each one's hsperfdata file through the process's own
// root (/proc/<pid>/root/tmp/hsperfdata_<user>/<nspid>) for its main class and its capabilities. A JVM
// in a container is reported under its host pid with its namespaced pid alongside. The JDK's jcmd
// instead lists hsperfdata files only (jdk.internal.jvmstat LocalVmManager and, for containers,
// sun.tools.attach PlatformSupportImpl), which misses -XX:-UsePerfData JVMs.
//
// # Matching
//
// [Select] implements jcmd's target argument: a pid; 0 for every attachable JVM; anything else is a
// substring of the main class or jar (jdk.jcmd sun/tools/common/ProcessArgumentMatcher.java).
//
// # Compatibility
//
// Verified against OpenJDK 17.0.15 (Debian) and Temurin 25.0.3 on Linux 6.18, both as plain processes
// and in pid+mount namespaces with a private /tmp. OpenJ9 is recognised and reported as not HotSpot.
package jcmd
