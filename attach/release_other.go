//go:build !linux

package attach

func (t *Target) releaseFeature() int { return 0 }
