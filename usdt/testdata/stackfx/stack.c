/*
 * stack is the fixture of the usdt stack-copy tests. It reads commands on stdin:
 *
 *   fire D   recurse D levels (each frame holds a 512-byte array), fill a 256-byte local array with a
 *            pattern, fire sfx:stack(array address, D) and print "stack <array address hex> D", then "done"
 *   thread D the same in a new thread (whose stack is a mapping of its own), then "done"
 *   quit     exit 0
 *
 * It prints "ready" first. Built by the usdt tests with gcc -O1.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>

/* pattern is the byte at index i of the array of a firing at depth d. */
static unsigned char pattern(int i, int d) { return (unsigned char)(i * 7 + d * 13 + 1); }

__attribute__((noinline)) static void fire(int depth) {
	volatile unsigned char arr[256];
	for (int i = 0; i < 256; i++)
		arr[i] = pattern(i, depth);
	DTRACE_PROBE2(sfx, stack, (uintptr_t)arr, depth);
	printf("stack %lx %d\n", (unsigned long)(uintptr_t)arr, depth);
}

__attribute__((noinline)) static int recurse(int n, int depth) {
	volatile char pad[512];
	pad[0] = (char)n;
	if (n == 0)
		fire(depth);
	else
		recurse(n - 1, depth);
	return pad[0];
}

static void *run(void *arg) {
	int d = (int)(intptr_t)arg;
	recurse(d, d);
	return NULL;
}

int main(void) {
	char line[128];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "fire ", 5) == 0) {
			int d = atoi(line + 5);
			recurse(d, d);
			printf("done\n");
		} else if (strncmp(line, "thread ", 7) == 0) {
			pthread_t th;
			if (pthread_create(&th, NULL, run, (void *)(intptr_t)atoi(line + 7)) != 0)
				return 1;
			pthread_join(th, NULL);
			printf("done\n");
		} else if (strncmp(line, "quit", 4) == 0) {
			return 0;
		}
	}
	return 0;
}
