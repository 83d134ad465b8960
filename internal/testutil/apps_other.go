//go:build !linux

package testutil

import "testing"

// StartApp skips the test: the applications run on Linux only here.
func StartApp(t testing.TB, kind AppKind, jdk JDK, opts AppOptions) *App {
	t.Helper()
	Skipf(t, "real-application tests need Linux")
	return nil
}

// StartApps skips the test: see StartApp.
func StartApps(t testing.TB, specs ...AppSpec) []*App {
	t.Helper()
	Skipf(t, "real-application tests need Linux")
	return nil
}

// MustHaveApp skips the test: see StartApp.
func MustHaveApp(t testing.TB, kind AppKind) {
	t.Helper()
	Skipf(t, "real-application tests need Linux")
}

// Load is a load generator: see StartApp.
type Load struct{}

// StartLoad skips the test: see StartApp.
func (a *App) StartLoad(t testing.TB, opts LoadOptions) *Load {
	t.Helper()
	Skipf(t, "real-application tests need Linux")
	return nil
}

// Wait returns nothing: see StartApp.
func (l *Load) Wait(t testing.TB) LoadResult { return LoadResult{} }

// Stop does nothing: see StartApp.
func (l *Load) Stop() {}
