package attach

import (
	"bytes"
	"strconv"
)

// ReleaseFeature reads the JDK feature release (8, 11, 17, 25, ...) from the text of a Java home's
// `release` file (JAVA_VERSION="17.0.15", JAVA_VERSION="1.8.0_392"); 0 when it names none.
func ReleaseFeature(release []byte) int {
	for line := range bytes.Lines(release) {
		v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte(`JAVA_VERSION="`))
		if !ok {
			continue
		}
		v = bytes.TrimPrefix(v, []byte("1."))
		end := bytes.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
		if end <= 0 || end > 4 {
			return 0
		}
		n, err := strconv.Atoi(string(v[:end]))
		if err != nil || n < 6 {
			return 0
		}
		return n
	}
	return 0
}
