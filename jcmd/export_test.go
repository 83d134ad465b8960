package jcmd

// The path rules, exported to the package's external tests only.
var (
	ExpandPath        = expandPath
	FileNameExpansion = fileNameExpansion
)
