package lazyre_test

import (
	"sync"
	"testing"

	"github.com/jvmkit/jvmkit/internal/lazyre"
)

var digits = &lazyre.Regexp{Expr: `^[0-9]+$`}

func TestGet(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if !digits.Get().MatchString("123") || digits.Get().MatchString("12a") {
				t.Error("wrong match")
			}
		})
	}
	wg.Wait()
	if first, again := digits.Get(), digits.Get(); first != again {
		t.Error("compiled twice")
	}
}
