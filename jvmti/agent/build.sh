#!/bin/sh
# Builds one of jvmkit's JVMTI agents, libjvmkit-<name>-linux-<arch>.so, from jvmkit_<name>.c, and records
# what it was built from in <library>.buildinfo, which jvmti's tests compare with the sources (a stale
# library fails TestAgentLibraryFresh; with the same compiler, a rebuild must give the same bytes).
#
# Run it as `make agent`. Environment:
#   NAME         the agent: perfmap (default) or heapsample
#   CC           the C compiler (default gcc)
#   JDK_INCLUDE  the include directory of a JDK 17 (default /usr/lib/jvm/java-17-openjdk-amd64/include);
#                jvmti.h is the same for every JDK from 9 on, as far as this agent uses it
#   ARCH         the Go name of the target architecture (default: the machine's, from uname -m)
#   OUT          the directory the library and its buildinfo go to (default: this directory)
#
# The flags make the build reproducible (no build id, no paths, stripped) and the library self-contained:
# libc only, no fortify or stack-protector symbols (so that musl-based JVMs can load it too), -z nodelete
# (see the comment at the top of the C source).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
NAME=${NAME:-perfmap}
CC=${CC:-gcc}
JDK_INCLUDE=${JDK_INCLUDE:-/usr/lib/jvm/java-17-openjdk-amd64/include}
OUT=${OUT:-$here}
if [ -z "${ARCH:-}" ]; then
	case $(uname -m) in
	x86_64) ARCH=amd64 ;;
	aarch64) ARCH=arm64 ;;
	*) echo "build.sh: unknown machine $(uname -m); set ARCH" >&2; exit 1 ;;
	esac
fi
for h in "$JDK_INCLUDE/jvmti.h" "$JDK_INCLUDE/jvmticmlr.h" "$JDK_INCLUDE/linux/jni_md.h"; do
	if [ ! -f "$h" ]; then
		echo "build.sh: $h not found; set JDK_INCLUDE to a JDK 17's include directory" >&2
		exit 1
	fi
done

lib=libjvmkit-$NAME-linux-$ARCH.so
tmp=$OUT/.$lib.$$.tmp
trap 'rm -f "$tmp" "$tmp.info"' EXIT

cd "$here"
# -std=gnu11: clock_gettime and strdup without feature macros. -isystem: jvmti.h has an old-style
# declaration (jvmtiEventReserved) that -Wstrict-prototypes would reject.
$CC -std=gnu11 -O2 -fPIC -shared -fvisibility=hidden \
	-fno-stack-protector -U_FORTIFY_SOURCE -fno-asynchronous-unwind-tables \
	-ffile-prefix-map="$here"=. \
	-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith -Wcast-qual -Werror \
	-isystem "$JDK_INCLUDE" -isystem "$JDK_INCLUDE/linux" \
	-Wl,--build-id=none -Wl,-z,nodelete -Wl,-z,now -Wl,-z,relro -Wl,-z,noexecstack \
	-Wl,--hash-style=both -Wl,--no-undefined -Wl,-s \
	-o "$tmp" "jvmkit_$NAME.c"

sum() { sha256sum "$1" | cut -d' ' -f1; }
{
	echo "# Written by build.sh; read by jvmti's TestAgentLibraryFresh. Do not edit."
	echo "library: $lib"
	echo "library-sha256: $(sum "$tmp")"
	echo "source-sha256: $(sum "jvmkit_$NAME.c")"
	echo "build-sha256: $(sum build.sh)"
	echo "jvmti-sha256: $(sum "$JDK_INCLUDE/jvmti.h")"
	echo "compiler: $($CC --version | head -n 1)"
} >"$tmp.info"
mv -f "$tmp" "$OUT/$lib"
mv -f "$tmp.info" "$OUT/$lib.buildinfo"
echo "$OUT/$lib"
