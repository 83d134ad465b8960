package realapps

import (
	"cmp"
	"regexp"
	"slices"
)

// Top returns the n keys with the largest values, largest first (ties by key, so the result is stable).
func Top(m map[string]int64, n int) []string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys
}

// Overlap counts the keys that a and b share.
func Overlap(a, b []string) int {
	n := 0
	for _, k := range a {
		if slices.Contains(b, k) {
			n++
		}
	}
	return n
}

// ShareAgreement is how far two distributions over the same keys agree: the sum over keys of the smaller
// of the two shares, 1 minus the total variation distance (1: the same shares; 0: nothing in common).
func ShareAgreement(a, b map[string]int64) float64 {
	var ta, tb int64
	for _, v := range a {
		ta += max(v, 0)
	}
	for _, v := range b {
		tb += max(v, 0)
	}
	if ta == 0 || tb == 0 {
		return 0
	}
	sum := 0.0
	for k, v := range a {
		if w, ok := b[k]; ok && v > 0 && w > 0 {
			sum += min(float64(v)/float64(ta), float64(w)/float64(tb))
		}
	}
	return sum
}

var hiddenClassAddress = regexp.MustCompile(`[/+.]0x[0-9a-fA-F]+`)

// NormalizeMethod makes the names of methods of hidden classes comparable between jvmkit
// ("Foo$$Lambda/0x0000000800c0b000.run") and JFR ("Foo$$Lambda+0x0000000800c0b000.run" or with a
// different address for the same lambda in another run): the address is dropped.
func NormalizeMethod(name string) string { return hiddenClassAddress.ReplaceAllString(name, "") }

// TiedOverlap counts the keys of a's top n that b ranks in its top n too, or whose value in b is at least
// b's n-th largest value less the fraction slack(key) of it. a is an estimate that knows key's value only
// to within that fraction, so it cannot rank key apart from b's n-th: such keys, and keys tied with b's
// n-th, are as good as in b's top n (Overlap breaks ties by name).
func TiedOverlap(a, b map[string]int64, n int, slack func(key string) float64) int {
	topB := Top(b, n)
	if len(topB) == 0 {
		return 0
	}
	nth := float64(b[topB[len(topB)-1]])
	hits := 0
	for _, k := range Top(a, n) {
		if slices.Contains(topB, k) || float64(b[k]) >= nth*(1-slack(k)) {
			hits++
		}
	}
	return hits
}
