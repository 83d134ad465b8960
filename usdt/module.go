package usdt

// Module is an ELF file mapped by a process, with its probe sites.
type Module struct {
	// Path is the file's path as the process sees it, from /proc/<pid>/maps.
	Path string `json:"path"`
	// File is where this process opens the same file: /proc/<pid>/root/<Path>, which also reaches into a
	// container's mount namespace, or /proc/<pid>/map_files/<range> when the file at that path is not the one
	// mapped (deleted or replaced since, as by a package upgrade, or a container entered by chroot, whose
	// maps show the host's path); see internal/rootfs. A uprobe attached through File fires in the process.
	File   string  `json:"file"`
	Probes []Probe `json:"probes"`
}
