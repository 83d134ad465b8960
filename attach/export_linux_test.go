package attach

// DialAs exposes the per-thread credential dial for tests.
var DialAs = dialAs

// NoReleaseHint has vm negotiate the protocol by asking the JVM, as where its release file is missing.
func NoReleaseHint(vm *VM) {
	vm.mu.Lock()
	vm.noHint = true
	vm.mu.Unlock()
}
