// Package parquet writes a flight recording as Parquet tables, one file per event type, for DuckDB,
// Spark, pandas and the like (parquet-go/parquet-go, pinned in go.mod).
//
// # Tables
//
// Export writes DIR/<event type>.parquet for every event type the recording has events of, one row
// an event, a column a field, every column optional (null where JFR has null or a constant is
// missing). Parquet orders a group's columns by name. Values:
//
//   - boolean, byte, short, int, long, float, double as such; @Unsigned fields as unsigned integers;
//     char and java.lang.String as strings;
//   - @Timestamp fields (startTime, allocationTime) as TIMESTAMP(NANOS, UTC), converted as the JDK
//     does; @Timespan fields (duration, objectAge) as INT64 nanoseconds, keeping the JDK's markers
//     (the minimum long for "no value", the maximum for "forever");
//   - a class as its Java name ("java.util.ArrayList"), a method as "pkg.Class.method", a class
//     loader, module, package or thread group as its name;
//   - a stack trace as a struct: truncated, and frames, a list of {method, descriptor, lineNumber,
//     bytecodeIndex, type}, leaf first;
//   - other constants and structs (threads, GC roots) as structs of their fields, to a depth of 4;
//     a type inside itself (an Old Object's referrer chain) as the JSON text jvmkit jfr print --json
//     gives it.
//
// # Compatibility
//
// Read back with DuckDB 1.5 in the tests (SELECT count(*) per table equals jvmkit jfr summary).
// This package is linked into jvmkit only: gjcmd and gjmaps do not carry the Parquet library.
package parquet
