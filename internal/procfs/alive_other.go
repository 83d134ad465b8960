//go:build !linux

package procfs

// Alive tells whether process pid runs, by the state in <root>/<pid>/stat (see the Linux version).
func (fs FS) Alive(pid int) bool { return pid > 0 && fs.aliveByStat(pid) }

func isNoProcess(error) bool { return false }
