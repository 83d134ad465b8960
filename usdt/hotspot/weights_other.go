//go:build !linux

package hotspot

import (
	"context"

	"github.com/jvmkit/jvmkit/usdt"
)

func (t *AllocTrace) openWeights(context.Context, bool) (*usdt.ThreadWeight, error) { return nil, nil }
func (t *AllocTrace) watchThreads()                                                 {}
func (t *AllocTrace) stopThreads()                                                  {}
func (t *AllocTrace) rebase()                                                       {}
