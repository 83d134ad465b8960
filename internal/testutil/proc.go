package testutil

import (
	"strconv"
	"strings"
)

// parseUnixSockets returns the inodes of the sockets bound to path in the text of /proc/<pid>/net/unix:
//
//	Num       RefCount Protocol Flags    Type St Inode Path
//	0000000000000000: 00000002 00000000 00010000 0001 01 41623 /tmp/.java_pid2304
func parseUnixSockets(data []byte, path string) []uint64 {
	var inodes []uint64
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) < 8 || strings.Join(fields[7:], " ") != path {
			continue
		}
		if ino, err := strconv.ParseUint(fields[6], 10, 64); err == nil {
			inodes = append(inodes, ino)
		}
	}
	return inodes
}

// parseHsperfdata returns the path, as the process sees it, of the hsperfdata file mapped in the text of
// /proc/<pid>/maps, or "" when nspid has none mapped (-XX:-UsePerfData).
func parseHsperfdata(data []byte, nspid int) string {
	suffix := "/" + strconv.Itoa(nspid)
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) < 6 {
			continue
		}
		path := strings.Join(fields[5:], " ")
		if dir, ok := strings.CutSuffix(path, suffix); ok && strings.HasPrefix(dir[strings.LastIndexByte(dir, '/')+1:], "hsperfdata_") {
			return path
		}
	}
	return ""
}
