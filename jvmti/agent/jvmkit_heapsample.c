/*
 * jvmkit_heapsample.c: a JVMTI agent that samples a running HotSpot JVM's allocations with the JVM's own
 * heap sampler (JEP 331, JDK 11+): each thread's next sample is a random, geometrically distributed number
 * of bytes away (mean: the interval), so that compiled code's fast path stops at random bytes, not where
 * TLABs end, and the JVM posts SampledObjectAlloc with the object's class and size. The agent writes one
 * record per sample to a file; jvmkit reads it after the session.
 *
 * It is loaded into a running JVM with the attach mechanism's "load" operation, twice per session: once to
 * start, once to stop. Options (comma-separated; file= comes last, everything after it is the path):
 *
 *   start,interval=N,deadline=S,max=B,file=PATH
 *                 start a session: sample every N bytes on average (N >= 1), until stopped, until
 *                 CLOCK_REALTIME reaches S seconds (so that a session whose jvmkit was killed ends by
 *                 itself), or until B bytes of records are written; records go to PATH, created
 *                 O_EXCL|O_NOFOLLOW, mode 0600 (jvmkit makes its directory, owned by the JVM's user)
 *   stop,file=PATH
 *                 end the session that writes PATH: the event is turned off and the file completed and
 *                 closed; another session, if one runs, is left alone
 *   stop          end whatever session runs (one whose jvmkit was killed)
 *
 * Records, little-endian as the machine: u64 size, u32 n, then n bytes of the class's JVM signature
 * ("Ljava/lang/String;", "[B").
 *
 * Return codes of Agent_OnAttach; nothing is ever printed:
 *   0          done
 *   1          invalid options
 *   2          the JVM offers no JVMTI 11 environment (before JDK 11)
 *   3          out of memory
 *   7          start: a session is running already; stop: that session is not running (ended by a
 *              forced stop, or by itself and followed by another); its file is complete
 *   8          stop: the session had ended by itself (deadline or size), the file is complete
 *   1000 + e   AddCapabilities failed with jvmtiError e (can_generate_sampled_object_alloc_events)
 *   2000 + e   setting up monitors, callbacks, the interval or the event failed with jvmtiError e
 *   4000 + n   creating the file failed with errno n
 *   5000 + n   writing it failed with errno n (stop)
 *
 * The environment, monitor and callbacks are made once and kept: a thread may be inside the callback when
 * the event is turned off. The library is linked with -z nodelete for the same reason.
 *
 * Written from the JVMTI specification (SampledObjectAlloc, SetHeapSamplingInterval).
 */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jvmti.h>

enum {
	RC_OK = 0,
	RC_OPTIONS = 1,
	RC_NO_JVMTI = 2,
	RC_NO_MEMORY = 3,
	RC_STATE = 7,
	RC_ENDED = 8,
	RC_CAPABILITIES = 1000,
	RC_SETUP = 2000,
	RC_CREATE = 4000,
	RC_WRITE = 5000,
};

#define BUF_SIZE (256 * 1024)

static jvmtiEnv *jvmti;
static jrawMonitorID mon; /* guards everything below */
static int have_callbacks;
static int init_lock;

static int active;    /* a session is sampling */
static char *cur_file;   /* the running session's file (malloc'ed) */
static char *ended_file; /* the file of the session that last ended by itself (malloc'ed) */
static int fd = -1;   /* its file */
static int write_err; /* first errno of a write */
static long long deadline_s;
static unsigned long long max_bytes, written;
static unsigned char *buf;
static size_t buf_len;

static void flush_buf(void)
{
	size_t off = 0;

	while (off < buf_len && write_err == 0) {
		ssize_t n = write(fd, buf + off, buf_len - off);
		if (n < 0) {
			if (errno != EINTR)
				write_err = errno;
			continue;
		}
		if (n == 0) {
			write_err = EIO;
			break;
		}
		off += (size_t)n;
	}
	buf_len = 0;
}

/* Ends the session with the monitor held: the event off, the file complete and closed. */
static void end_locked(void)
{
	(*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, NULL);
	active = 0;
	flush_buf();
	if (fd >= 0 && close(fd) != 0 && write_err == 0)
		write_err = errno;
	fd = -1;
}

static void JNICALL on_sample(jvmtiEnv *env, JNIEnv *jni, jthread thread, jobject object, jclass klass, jlong size)
{
	char *sig = NULL;
	struct timespec now;
	size_t n;

	(void)jni;
	(void)thread;
	(void)object;
	if (!__atomic_load_n(&active, __ATOMIC_RELAXED))
		return;
	if ((*env)->GetClassSignature(env, klass, &sig, NULL) != JVMTI_ERROR_NONE || sig == NULL)
		return;
	n = strlen(sig);
	if (n > 65535)
		n = 65535;
	clock_gettime(CLOCK_REALTIME, &now);
	(*env)->RawMonitorEnter(env, mon);
	if (active) {
		if ((long long)now.tv_sec >= deadline_s || written + 12 + n > max_bytes) {
			free(ended_file);
			ended_file = cur_file;
			cur_file = NULL;
			end_locked();
		} else {
			uint64_t sz = (uint64_t)size;
			uint32_t len = (uint32_t)n;
			if (buf_len + 12 + n > BUF_SIZE)
				flush_buf();
			memcpy(buf + buf_len, &sz, 8);
			memcpy(buf + buf_len + 8, &len, 4);
			memcpy(buf + buf_len + 12, sig, n);
			buf_len += 12 + n;
			written += 12 + n;
		}
	}
	(*env)->RawMonitorExit(env, mon);
	(*env)->Deallocate(env, (unsigned char *)sig);
}

/* Makes the environment, monitor and callbacks once; retried on a later load after a failure. */
static jint setup(JavaVM *vm)
{
	jvmtiError e;
	jint rc = RC_OK;

	while (__atomic_test_and_set(&init_lock, __ATOMIC_ACQUIRE))
		sched_yield();
	if (jvmti == NULL && (*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_11) != JNI_OK) {
		jvmti = NULL;
		rc = RC_NO_JVMTI;
		goto out;
	}
	if (mon == NULL && (e = (*jvmti)->CreateRawMonitor(jvmti, "jvmkit heapsample", &mon)) != JVMTI_ERROR_NONE) {
		mon = NULL;
		rc = RC_SETUP + (jint)e;
		goto out;
	}
	if (buf == NULL && (buf = malloc(BUF_SIZE)) == NULL) {
		rc = RC_NO_MEMORY;
		goto out;
	}
	if (!have_callbacks) {
		jvmtiEventCallbacks cb;
		memset(&cb, 0, sizeof(cb));
		cb.SampledObjectAlloc = on_sample;
		if ((e = (*jvmti)->SetEventCallbacks(jvmti, &cb, (jint)sizeof(cb))) != JVMTI_ERROR_NONE) {
			rc = RC_SETUP + (jint)e;
			goto out;
		}
		have_callbacks = 1;
	}
out:
	__atomic_clear(&init_lock, __ATOMIC_RELEASE);
	return rc;
}

/* Parses a decimal number that fills [s, end). */
static int parse_num(const char *s, const char *end, unsigned long long *v)
{
	if (s == end)
		return -1;
	*v = 0;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9' || *v > (~0ULL - 9) / 10)
			return -1;
		*v = *v * 10 + (unsigned long long)(*s - '0');
	}
	return 0;
}

static jint start(const char *opts)
{
	unsigned long long interval = 0, deadline = 0, max = 0, v;
	const char *file = NULL, *p = opts;
	jvmtiCapabilities caps;
	jvmtiError e;
	jint rc = RC_OK;

	while (*p != '\0' && file == NULL) {
		const char *end = strchr(p, ',');
		if (end == NULL)
			end = p + strlen(p);
		if (strncmp(p, "file=", 5) == 0) {
			file = p + 5;
			break;
		}
		if (strncmp(p, "interval=", 9) == 0 && parse_num(p + 9, end, &v) == 0 && v >= 1 && v <= 0x7fffffff)
			interval = v;
		else if (strncmp(p, "deadline=", 9) == 0 && parse_num(p + 9, end, &v) == 0 && v <= 0x7fffffffffffLL)
			deadline = v;
		else if (strncmp(p, "max=", 4) == 0 && parse_num(p + 4, end, &v) == 0)
			max = v;
		else if (end != p)
			return RC_OPTIONS;
		p = *end == ',' ? end + 1 : end;
	}
	if (interval == 0 || deadline == 0 || max == 0 || file == NULL || file[0] != '/')
		return RC_OPTIONS;

	(*jvmti)->RawMonitorEnter(jvmti, mon);
	if (active) {
		rc = RC_STATE;
		goto out;
	}
	memset(&caps, 0, sizeof(caps));
	caps.can_generate_sampled_object_alloc_events = 1;
	if ((e = (*jvmti)->AddCapabilities(jvmti, &caps)) != JVMTI_ERROR_NONE) {
		rc = RC_CAPABILITIES + (jint)e;
		goto out;
	}
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = RC_CREATE + errno;
		goto out;
	}
	free(cur_file);
	cur_file = strdup(file);
	if (cur_file == NULL) {
		rc = RC_NO_MEMORY;
		goto fail;
	}
	write_err = 0;
	written = 0;
	buf_len = 0;
	deadline_s = (long long)deadline;
	max_bytes = max;
	if ((e = (*jvmti)->SetHeapSamplingInterval(jvmti, (jint)interval)) != JVMTI_ERROR_NONE) {
		rc = RC_SETUP + (jint)e;
		goto fail;
	}
	active = 1;
	if ((e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, NULL)) != JVMTI_ERROR_NONE) {
		rc = RC_SETUP + (jint)e;
		goto fail;
	}
	goto out;
fail:
	end_locked();
	unlink(file);
	free(cur_file);
	cur_file = NULL;
out:
	(*jvmti)->RawMonitorExit(jvmti, mon);
	return rc;
}

/* Ends the session that writes file, or with file NULL whatever session runs. */
static jint stop(const char *file)
{
	jint rc = RC_OK;

	(*jvmti)->RawMonitorEnter(jvmti, mon);
	if (active && (file == NULL || (cur_file != NULL && strcmp(file, cur_file) == 0))) {
		end_locked();
		if (write_err != 0)
			rc = RC_WRITE + write_err;
		free(cur_file);
		cur_file = NULL;
	} else if (file != NULL && ended_file != NULL && strcmp(file, ended_file) == 0) {
		rc = !active && write_err != 0 ? RC_WRITE + write_err : RC_ENDED;
		free(ended_file);
		ended_file = NULL;
	} else {
		rc = RC_STATE;
	}
	if (!active)
		write_err = 0;
	(*jvmti)->RawMonitorExit(jvmti, mon);
	return rc;
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
	jint rc;

	(void)reserved;
	if (options == NULL)
		return RC_OPTIONS;
	rc = setup(vm);
	if (rc != RC_OK)
		return rc;
	if (strcmp(options, "stop") == 0)
		return stop(NULL);
	if (strncmp(options, "stop,file=", 10) == 0)
		return stop(options + 10);
	if (strncmp(options, "start,", 6) == 0)
		return start(options + 6);
	return RC_OPTIONS;
}
