// Package jvmti loads jvmkit's JVMTI agents into running HotSpot JVMs from outside: the agent libraries
// (C, in jvmti/agent, built by `make agent` and embedded), their staging in the JVM's own /tmp where
// nobody but root and the JVM's user can change them (Session.Stage), private output directories
// (Session.PrivateDir) and the attach load operation. perfmap's FromAgent uses it for the perf-map
// snapshot agent; HeapSample runs the heap-sampling agent.
//
// Linux only; elsewhere Open fails with ErrNotSupported.
package jvmti
