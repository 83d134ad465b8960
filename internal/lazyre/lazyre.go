// Package lazyre holds regular expressions compiled on first use. Declared as a pointer to a
// composite literal (var re = &lazyre.Regexp{Expr: `...`}), one costs nothing at package
// initialization, where regexp.MustCompile or a sync.OnceValue would (gjcmd starts in a millisecond
// and pays only for the parsers it runs).
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is the regular expression Expr, compiled by the first Get.
type Regexp struct {
	Expr string
	once sync.Once
	re   *regexp.Regexp
}

// Get returns the compiled expression; an invalid Expr panics, as regexp.MustCompile does.
func (l *Regexp) Get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.Expr) })
	return l.re
}
