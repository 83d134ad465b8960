// Package jfr reads JDK Flight Recorder files without a JDK: every event type a recording's own
// metadata declares, decoded generically, with the values the JDK's reader gives; flame graphs,
// Old Object Sample leak chains and JSON lines equal to `jfr print --json`'s.
//
// # Format
//
// There is no specification besides the JDK's reader and writer (jdk.jfr.internal.consumer:
// ChunkHeader, ChunkParser, MetadataReader, ParserFactory, StringParser, TimeConverter; hotspot's
// jfr/recorder/repository/jfrChunkWriter.cpp). A recording is one or more chunks, each on its own:
//
//   - A 68-byte big-endian header: "FLR\0", major and minor version (2.0 JDK 11, 2.1 JDK 14+), chunk
//     size, offsets of the last checkpoint and of the metadata event, start time (ns since the
//     epoch), duration, start ticks, ticks per second, and 4 bytes: JDK 11's feature word (1 =
//     compressed integers), JDK 14+'s file state (0 = finished), two reserved bytes and flags
//     (bit 0 compressed integers, bit 1 final chunk).
//   - Events, each a size and a type id, then its fields in the metadata's order. Integers (char,
//     short, int, long, and sizes, ids, counts) are varints: seven bits a byte, low bits first, the
//     ninth byte whole; booleans and bytes one byte; floats and doubles big-endian IEEE. A string
//     starts with an encoding: null, empty, constant-pool key, UTF-8, UTF-16 chars, Latin-1. An
//     array is a count and its elements; a field marked constantPool is a key into the chunk's pool
//     of its type; other fields of types with fields are inline structs.
//   - The metadata event (type 0): a string table and a tree of elements (root > metadata >
//     class > field/setting/annotation, and region with the JVM's time zone). Each class has an id,
//     a name, a super type ("jdk.jfr.Event" for event types) and fields.
//   - Checkpoint events (type 1): constants, pool by pool: a type id, a count, key and value pairs.
//     A chunk's checkpoints are chained backwards from the header's offset by their delta field.
//
// # What the JDK's reader does, and so this one
//
// Constants are resolved lazily and may refer to each other; a constant that refers to itself reads
// as null where the cycle closes, and a missing one as null. A key the previous chunk also had keeps
// that chunk's value. Ticks become nanoseconds with the first chunk's start and frequency for every
// chunk, through a double, truncated. Events of types the metadata does not declare as events are
// skipped. `jfr print` orders each chunk's events by end time (stable). Timespans and timestamps
// follow RecordedObject's rules, with its markers (Long.MIN_VALUE, Long.MAX_VALUE).
//
// # Damage
//
// A chunk whose header is unfinished or runs past the end of the file, or whose events stop making
// sense, is read event by event up to the damage: its metadata (or the previous chunk's) and the
// checkpoints before the damage serve the events before it, and Parse returns a *FormatError with the
// file offset. The JVM writes the constants an event refers to (its stack trace, thread, classes) in a
// checkpoint after the event, so in a cut chunk (or one with a damaged checkpoint) some references
// have no constant: those are lost (*LostConstant), not null, unless their key is 0, the format's
// null (but the JVM's enumerations, such as jdk.types.FrameType, number their constants from 0). A
// lost value is one the part read cannot give: rarely, the whole recording would show null there too
// (the JVM does not always write a constant it refers to). In an undamaged chunk a missing constant is
// null, as in the JDK's reader.
//
// Every length is checked against the bytes that remain before anything is allocated,
// and nesting is bounded, so no input makes the reader panic or exhaust memory (fuzzed).
//
// # Compatibility
//
// Tested against the JDK's own tool on recordings made by the tests: JDK 11 (Debian 11.0.24), 17
// (Debian 17.0.15) and Temurin 25, default and profile settings, one and several chunks, and JDK 25's
// jdk.CPUTimeSample. Values equal JDK 25's `jfr print --json`, floats in Java's text (20.0, 1.0E-7). Older JDKs' tools print two things differently, which the tests
// allow for: unsigned numbers with their sign (JDK 17 and before; "-1" for 18446744073709551615), and
// a Long.MAX_VALUE timespan in milliseconds as that many milliseconds instead of "forever"; JDK 11's
// tool also times some events up to a millisecond away from JDK 25's (seen on a second chunk's
// jdk.ExecuteVMOperation, 0.74 ms). Version
// 1.x files (JDK 9 and 10) are read with the com.oracle.jdk prefix but are untested. Chunks larger
// than 2 GiB are refused.
//
// grafana/jfr-parser (v0.9.3) was considered and not used: it decodes a fixed set of a dozen event
// types with generated structs and skips the rest, which includes OldObjectSample and its reference
// chain types, so everything here would have to be written generically anyway.
package jfr
