#!/bin/sh
# record.sh makes the jvm-*.txt perf script fixtures under fold/ from a real JVM running Burn.java:
# 3 s of cpu-clock at 999 Hz with call graphs, symbolised with the JDK's own perf map (jcmd
# Compiler.perfmap) and with gjmaps --unfold --annotate, trimmed to every 50th (100th) sample.
#
# Needs root (perf record -p, gjmaps), perf, a JDK 17 (java, javac, jcmd) and go; run it from the
# repository root: sh flame/testdata/record.sh. Then regenerate the golden files with
#   go test ./flame -run TestFoldGolden -update
# and check them against stackcollapse-perf.pl (see fold_test.go):
#   go test ./flame -run 'TestFold(Golden|Random)' -stackcollapse=/path/to/FlameGraph/stackcollapse-perf.pl
set -eu
out=flame/testdata/fold
work=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	[ -n "$pid" ] && rm -f "/tmp/perf-$pid.map"
	rm -rf "$work"
}
trap cleanup EXIT

javac -d "$work" flame/testdata/Burn.java
java -XX:+PreserveFramePointer -Xmx64m -cp "$work" Burn >"$work/java.out" 2>&1 &
pid=$!
sleep 3 # JIT warm-up
perf record -e cpu-clock -F 999 -g -p "$pid" -o "$work/perf.data" -- sleep 3

fields="comm,pid,tid,time,period,event,ip,sym,dso"
every() { awk -v RS= -v ORS='\n\n' -v n="$1" 'NR % n == 1'; }

jcmd "$pid" Compiler.perfmap >/dev/null
perf script -i "$work/perf.data" | every 100 >"$out/jvm-default.txt"
perf script -i "$work/perf.data" -F "$fields" --ns | every 50 >"$out/jvm-fields.txt"

go run ./cmd/gjmaps -p "$pid" --unfold --annotate
perf script -i "$work/perf.data" -F "$fields" --ns | every 50 >"$out/jvm-unfold.txt"
