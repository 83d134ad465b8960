package jcmd

// Suggest returns the candidate closest to name by edit distance, or "" when none is close enough
// to be a plausible typo (at most a third of the name's length, at least 1).
func Suggest(name string, candidates []string) string {
	best, bestD := "", len(name)/3+1
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestD || (d == bestD && best == "" && d <= len(name)/3) {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(1, len(name)/3) {
		return ""
	}
	return best
}

func closestName(name string, candidates []string) string { return Suggest(name, candidates) }

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
