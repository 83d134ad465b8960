// Package flame folds `perf script` stacks and draws them: folded text, an interactive SVG flame graph,
// or a pprof profile.
//
// # Folding
//
// Fold reads the text of `perf script` for a recording with call graphs (perf record -g), in its default
// form or in the form jvmkit recommends:
//
//	perf script -F comm,pid,tid,time,period,event,ip,sym,dso --ns
//
// A sample is a header line, "comm [pid/]tid [cpu] time: [period] event:", its frames leaf first, one a
// line, "ip sym[+0xoff] (dso)", and a blank line (tools/perf/Documentation/perf-script.txt). Lines that
// start with "#" (perf script --header) are skipped. It folds them as brendangregg/FlameGraph's
// stackcollapse-perf.pl does, so that its output is interchangeable with the script's (which we neither
// copy nor ship: it is CDDL):
//
//   - One line per distinct stack, "comm;root;...;leaf count", sorted bytewise. The first frame is the
//     comm with blanks turned to "_", or "comm-pid" (PID), or "comm-pid/tid" (TID); perf script's
//     default prints no pid, which is then "?".
//   - A sample counts its period when the header has one ("1001001 cpu-clock:"), else 1; Count counts
//     samples. A period of 0 counts 1.
//   - Only the event of the first sample is kept unless Event names one: adding cycles to instructions
//     means nothing.
//   - Names lose their offset ("+0x1a"), everything from the first "(" (argument lists: "double Burn.h"),
//     except in Go method names ("net/http.(*Client).Do") and "(anonymous namespace)", and their quotes;
//     ";" becomes ":". A symbol that starts with "(" is left out. In processes whose comm starts with
//     "java", names with a "/" lose a leading "L" ("Ljava/lang/String;::hashCode" becomes
//     "java/lang/String:::hashCode").
//   - "[unknown]" becomes the dso's base name in brackets ("[libjvm.so]"), or "[unknown]"; with Addrs,
//     "[libjvm.so <f55d4e>]".
//   - A symbol with "->" is an inlining chain, outermost method first (perf-map-agent's unfoldall,
//     gjmaps --unfold): each method is a frame, the inlined ones suffixed "_[i]".
//   - Kernel adds "_[k]" to frames whose dso is in brackets ("[kernel.kallsyms]", also "[vdso]") or ends
//     in "vmlinux"; JIT adds "_[j]" to frames of a perf map ("/tmp/perf-<pid>.map") unless the name
//     already has it.
//
// Where perf script's output is odd, Fold follows the script's regular expressions, not a cleaner
// reading: a sample ends only at a blank line; a comm is the shortest prefix that a pid follows; a tid
// of 0 stands for a missing one. Two deliberate differences: a line that is neither a header nor a frame
// is an error (*ParseError, with its line number) unless Lenient, where the script warns and goes on;
// and a period spelled as zero other than "0" counts 1, where the script counts 0. A sample that the
// input ends in (no blank line after it) is left out, as by the script, and reported in
// FoldStats.Truncated; so is the sample of a last line that has no newline and does not parse (input
// cut mid-line by a killed perf script or a full disk), which is not an error. "\r\n" line ends are
// accepted.
//
// ParseFolded reads folded text back (any stackcollapse script's), WriteFolded writes it, and Sniff tells
// the two inputs apart.
//
// # Flame graphs
//
// WriteSVG draws a self-contained SVG with an inline script (flame.js): tooltips, click to zoom, search.
// It is our own design; see WriteSVG for what the colours mean. WritePprof writes a profile.proto
// (github.com/google/pprof/profile) for `go tool pprof` and other pprof readers.
//
// # Compatibility
//
// Fold is checked against stackcollapse-perf.pl (FlameGraph commit 41fee1f, 2024) on perf script output
// of perf 6.1 for JDK 17 recordings, in both forms above, and on hand-written inputs; see fold_test.go for
// which options. The script's --inline, --context and --srcline (addr2line lookups, source lines) are not
// supported.
package flame
