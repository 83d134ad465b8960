// Package clitree is the cobra side of the command trees of gjmaps and jvmkit, and of the trees the
// release tool generates completions and man pages from: Run (a tree's one exit point) and FinishTree
// (--version, pid completions, the marks of what a build's architecture cannot do). What every tool
// shares without cobra (exit statuses, the version, the signals that interrupt, pid completion) is in
// package cliutil: gjcmd, which starts often and must start fast, links that and not cobra.
package clitree
