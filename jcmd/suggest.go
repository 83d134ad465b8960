package jcmd

// Suggest returns the candidate that name most likely misspells (same name in another case, the only
// candidate it begins, or one within a small edit distance, transpositions counted once), or "".
func Suggest(name string, candidates []string) string { return closest(name, candidates) }
