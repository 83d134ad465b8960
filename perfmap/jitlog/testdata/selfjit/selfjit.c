/*
 * selfjit: a tiny "JIT" for the perf tests of package jitlog. It copies a loop into an anonymous
 * executable page and runs it for a while as the first "method", then installs it again at the same
 * address (a recompilation) and runs it as the second. It reports on stdout, a line as it happens:
 *
 *   <addr hex> <size> <t_load>    once the first is installed
 *   <t_switch>                    once the second is installed
 *   <t_end>
 *
 * with times in nanoseconds of CLOCK_MONOTONIC, the clock of perf record -k mono. Usage: selfjit MS,
 * the milliseconds of each phase. Built by the tests with gcc.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__x86_64__)
/* mov ecx, 0x1000; 1: dec ecx; jnz 1b; ret */
static const unsigned char code[] = {0xb9, 0x00, 0x10, 0x00, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3};
#elif defined(__aarch64__)
/* mov w9, #0x1000; 1: subs w9, w9, #1; b.ne 1b; ret */
static const uint32_t code[] = {0x52820009, 0x71000529, 0x54ffffe1, 0xd65f03c0};
#else
#error "selfjit: no code for this architecture"
#endif

static uint64_t now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void install(unsigned char *page) {
	mprotect(page, 4096, PROT_READ | PROT_WRITE);
	memcpy(page, code, sizeof code);
	mprotect(page, 4096, PROT_READ | PROT_EXEC);
	__builtin___clear_cache((char *)page, (char *)page + sizeof code);
}

static void spin(void (*f)(void), uint64_t ns) {
	uint64_t t0 = now();
	while (now() - t0 < ns)
		f();
}

int main(int argc, char **argv) {
	if (argc != 2)
		return 2;
	uint64_t ns = (uint64_t)atol(argv[1]) * 1000000u;
	unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
	/* Stamped once installed, as HotSpot fires compiled__method__load; mprotect making the page
	 * executable is an mmap event for perf, which must come before the jitdump's load. */
	install(page);
	printf("%lx %zu %llu\n", (unsigned long)(uintptr_t)page, sizeof code, (unsigned long long)now());
	fflush(stdout);
	spin((void (*)(void))page, ns);
	install(page); /* the same code again: a new method at the same address */
	printf("%llu\n", (unsigned long long)now());
	fflush(stdout);
	spin((void (*)(void))page, ns);
	printf("%llu\n", (unsigned long long)now());
	return 0;
}
