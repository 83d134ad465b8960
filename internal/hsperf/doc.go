// Package hsperf reads HotSpot "hsperfdata" files, the shared-memory performance counters that
// every HotSpot JVM started with -XX:+UsePerfData (the default) maps at
// /tmp/hsperfdata_<user>/<pid>, and prints them the way `jcmd <pid> PerfCounter.print` does.
//
// Parse is a pure decoder of a file image: deterministic, never panicking, fuzzed (FuzzParse),
// and keeping what it decoded before any damage. ReadFile adds what reading a live file needs;
// Find locates the file of a JVM under some tmp directory, e.g. a container's
// /proc/<pid>/root/tmp with the pid as seen inside the container.
//
// # Format
//
// Sources: openjdk/jdk src/hotspot/share/runtime/perfMemory.hpp (PerfDataPrologue,
// PerfDataEntry), perfData.hpp and perfData.cpp (units, variability, flags, and the entry layout
// written by PerfData::create_entry), and the reader in jdk.internal.jvmstat,
// sun/jvmstat/perfdata/monitor/v2_0/{PerfDataBufferPrologue,PerfDataBuffer}.java; the listing
// is sun/tools/jcmd/JCmd.java (listCounters) and sun/tools/jstat/JStatLogger.java (printList).
//
// The file has a fixed size (-XX:PerfDataMemorySize, 32 KiB by default) and starts with a
// 32-byte prologue:
//
//	0  magic          CA FE C0 C0, as bytes (i.e. read big-endian)
//	4  byte_order     0 big endian, 1 little endian; applies to every field after the magic
//	5  major, minor   2, 0 (the only format since JDK 5)
//	7  accessible     set to 1 once the JVM has initialized the memory
//	8  used           i32, bytes allocated including the prologue
//	12 overflow       i32, bytes of counters that did not fit (they live in the C heap only)
//	16 mod_time_stamp i64, ticks of the last structural change
//	24 entry_offset   i32, 32
//	28 num_entries    i32
//
// Entries follow back to back, each 8-byte aligned by HotSpot:
//
//	0  entry_length      i32, the next entry starts at this entry + entry_length
//	4  name_offset       i32, from the entry start; HotSpot always writes 20
//	8  vector_length     i32, 0 for a scalar
//	12 data_type         u8, a JNI type char: 'J' scalar int64, 'B' byte vector (strings)
//	13 flags             u8, bit 0 = supported
//	14 data_units        u8, 1 none, 2 bytes, 3 ticks, 4 events, 5 string, 6 hertz
//	15 data_variability  u8, 1 constant, 2 monotonic, 3 variable
//	16 data_offset       i32, from the entry start; aligned to the element size
//	20 name              NUL-terminated, then padding, then the value
//
// A string counter's value ends at its first NUL (a one-byte vector is the empty string, as in
// PerfStringMonitor). Ticks are in units of sun.os.hrt.frequency per second.
//
// Parse walks num_entries entries and checks every offset and length against the entry and the
// image, so its loop is bounded by the image size. It is stricter than the jvmstat reader, which
// never fails on what HotSpot cannot write but reads garbage instead: a byte_order other than 0
// or 1, an entry not 4-byte aligned, an offset into the entry header, a name without NUL, an
// empty name, or a value running past its entry are errors (wrapping ErrCorrupt); the name is
// read at name_offset, where jvmstat assumes offset 20. An entry of a type other than scalar 'J'
// or vector 'B' is kept undecoded (Entry.Bytes holds its raw data); jcmd aborts the whole listing
// on one. A major version other than 2 is ErrVersion.
//
// Reading a live file: the JVM sets 'accessible' after initializing the memory, and it bumps
// num_entries in PerfMemory::alloc before it fills in the new entry, so a reader can meet a
// zero-length or half-written entry at the end for an instant. ReadFile therefore re-reads, a
// bounded number of times, while the file is not accessible or looks torn. The JVM deletes its
// file on a normal exit (SIGTERM included); after SIGKILL it stays until another JVM of the same
// user starts and cleans up, so a file alone does not prove a live JVM.
//
// # jcmd PerfCounter.print
//
// jcmd does not attach for this command: it maps the file and prints what the jvmstat reader
// makes of it. WritePerfCounters reproduces that byte for byte; Counters gives the same list as
// entries. What the format does that one might not expect:
//
//   - Six pseudo counters derived from the prologue are listed with the file's entries:
//     sun.perfdata.majorVersion, .minorVersion, .size (the file size, not 'used'), .used,
//     .overflow and .timestamp (mod_time_stamp). sun.perfdata.entries is not.
//   - Counters are sorted by name with String.compareTo (UTF-16 code units), which for the ASCII
//     names HotSpot uses is byte order of the names. That is not sort(1) order of the lines:
//     "sun.cls.appClassLoadTime=" comes before "sun.cls.appClassLoadTime.self=" in jcmd, after
//     it in sort(1) since '=' > '.'.
//   - Strings are wrapped in double quotes with nothing escaped: sun.rt.internalVersion contains
//     `by "buildd"`, and a value could contain a newline.
//   - Numbers are raw: no unit conversion (ticks stay ticks), no thousands separators, and
//     unsupported counters (flags bit 0 clear) are listed like the others.
//   - Entries are loaded into a map by name, so a duplicated name shows once, with the later
//     value; a file entry would also replace a pseudo counter of the same name.
//   - jcmd decodes names and strings with its default charset and prints them in the console's
//     encoding: under a UTF-8 locale the bytes come out unchanged, as they do here; under LANG=C
//     a non-ASCII character prints as '?' (JDK 17: one per byte, JDK 25: one per character). Only
//     values taken from the command line (sun.rt.javaCommand, java.rt.vmArgs, paths) can be
//     non-ASCII; HotSpot's names are ASCII.
//
// # Compatibility
//
// Verified against live JVMs (TestLiveParity: same names, same order, same values for every
// constant counter as the JDK's own jcmd) and captured files in testdata (jdk17.*, jdk25.*):
//
//   - OpenJDK 17.0.15+6-Debian-1deb12u1, linux/amd64: format 2.0, little endian, 32768-byte
//     file, 187 entries (12328 bytes used), 193 lines from jcmd.
//   - Temurin 25.0.3+9-LTS, linux/amd64: format 2.0, little endian, 32768-byte file, 185 entries
//     (12168 bytes used), 191 lines. Compared with 17 it drops sun.os.hrt.ticks,
//     sun.cls.lookupSysClassTime and the seven sun.rt._sync_* counters, and adds
//     sun.cls.secondarySuperHashTime, sun.threads.total_gc_cpu_time and
//     sun.threads.cpu_time.{gc_conc_mark,gc_conc_refine,gc_parallel_workers,gc_service,vm}.
//
// In both, every entry is a scalar 'J' or a 'B' string with name_offset 20 and an 8-byte
// multiple length, and the bytes after the last entry are zero. Big-endian files come only from
// the tests' generator (buildFile); the byte_order handling follows the jvmstat reader.
//
// Regenerating the fixtures: go test -run TestLiveParity -capture (copies a fresh file and jcmd
// output per JDK), then go test -run 'TestGolden|TestFuzzSeedCorpus' -update.
package hsperf
