/*
 * jvmkit_perfmap.c: a JVMTI agent that writes a snapshot of a HotSpot JVM's code cache as a perf map
 * (tools/perf/Documentation/jit-interface.txt): one line "START SIZE name" per compiled method and per
 * piece of generated code (interpreter, stubs, adapters), START and SIZE in lower-case hex without "0x".
 *
 * It is loaded into a running JVM with the attach mechanism's "load" operation (jvmkit's perfmap.FromAgent,
 * or jcmd JVMTI.agent_load) and does its whole job inside Agent_OnAttach: it turns on the CompiledMethodLoad
 * and DynamicCodeGenerated events, has the JVM replay them for the code that exists (GenerateEvents), turns
 * them off again and returns. Nothing keeps running in the JVM afterwards.
 *
 * Options: a comma-separated list; empty items are ignored. Names follow perf-map-agent's
 * (jvm-profiling-tools/perf-map-agent), so that scripts written for it keep working, but each item must be
 * one of these words exactly (perf-map-agent looks for substrings and ignores the rest):
 *
 *   (default)            a compiled method is named "Lpkg/Class;::method", its class in the JVM's
 *                        notation; generated code is named as the JVM names it ("Interpreter",
 *                        "StubRoutines (1)", ...).
 *   unfold               besides the method's own code, each range of code that belongs to an inlined
 *                        method gets its own entry, named "inlined in root" ("LB;::g in LA;::f"). The
 *                        entries of one compiled method tile its code without overlapping.
 *   unfoldsimple         as unfold, but an inlined range is named by the inlined method alone ("LB;::g").
 *   unfoldall            as unfold, but every range is named by its whole inlining chain, outermost method
 *                        first, joined by "->" ("LA;::f->LB;::g->LC;::h"). unfoldall wins over unfoldsimple,
 *                        which wins over unfold.
 *   use_semicolon_unfold_delimiter
 *                        unfoldall joins the chain with ";" instead of "->".
 *   msig                 the method's JVM signature follows its name ("LA;::f(JI)J").
 *   sourcepos            "(File.java:N)" follows, N being the line of the method's first bytecode; just
 *                        "(File.java)" without line numbers; nothing when the class has no source file.
 *   dottedclass          "/" in class names becomes "." ("Ljava.lang.String;::hashCode").
 *   cleanclass           the "L" and ";" around class names go ("java/lang/String::hashCode"); with
 *                        dottedclass, "java.lang.String::hashCode".
 *   annotate_java_frames "_[j]" follows the name of each compiled method and "_[i]" that of each inlined
 *                        one, which flame graph tools colour: "LA;::f_[j]", "LB;::g in LA;::f_[i]",
 *                        "LB;::g_[i]", "LA;::f_[j]->LB;::g_[i]". Generated code is not annotated.
 *   debug_dump_unfold_entries
 *                        accepted and ignored (perf-map-agent prints to the JVM's stdout with it; the
 *                        JVM's output belongs to its user).
 *   file=PATH            write the map to PATH, an absolute path, instead of /tmp/perf-<pid>.map, pid being
 *                        the JVM's own (getpid(): inside a container, the pid in its namespace). Everything
 *                        after "file=" is the path, commas included, so file= comes last.
 *
 * The parts of a name come in the order class, "::", method, signature, source position, annotation.
 * Line breaks in names become spaces.
 *
 * The map is written to a new file in the same directory, created O_EXCL|O_NOFOLLOW, and renamed over PATH
 * at the end: a reader never sees half a map, and a symbolic link planted at PATH is replaced, not
 * followed. Compilations that finish while the events are on are written too.
 *
 * Return codes of Agent_OnAttach (also documented in perfmap/agent_linux.go); nothing is ever printed:
 *   0          the map was written
 *   1          invalid options
 *   2          the JVM offers no JVMTI 1.2 environment
 *   3          out of memory
 *   1000 + e   AddCapabilities failed with jvmtiError e
 *   2000 + e   setting up monitors, callbacks or events failed with jvmtiError e
 *   3000 + e   GenerateEvents failed with jvmtiError e
 *   4000 + n   creating the temporary file failed with errno n
 *   5000 + n   writing or closing it failed with errno n
 *   6000 + n   renaming it over PATH failed with errno n (the temporary file is removed)
 *
 * Loading it again, with the same or other options, is safe: the JVMTI environment, its monitors and
 * callbacks are made once and kept in statics, and never disposed, since a compiler or service thread may
 * be inside a callback when the events are turned off. The library is linked with -z nodelete: when
 * Agent_OnAttach fails, HotSpot dlcloses it, and its code must stay mapped for such a thread. A second load
 * by the same path reaches the same instance (the dynamic linker matches loaded libraries by name).
 *
 * Agent_OnLoad (-agentpath:...=OPTIONS at JVM start) checks the options and writes the map once, when the
 * VM has initialized (VMInit): then it holds the interpreter and stubs, and no compiled methods yet.
 * Errors there are not reported anywhere.
 *
 * Written from the JVMTI specification (docs.oracle.com/en/java/javase/17/docs/specs/jvmti.html) and
 * jvmticmlr.h; options and naming after perf-map-agent's documentation.
 */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jvmti.h>
#include <jvmticmlr.h>

enum {
	RC_OK = 0,
	RC_OPTIONS = 1,
	RC_NO_JVMTI = 2,
	RC_NO_MEMORY = 3,
	RC_CAPABILITIES = 1000,
	RC_SETUP = 2000,
	RC_GENERATE = 3000,
	RC_CREATE = 4000,
	RC_WRITE = 5000,
	RC_RENAME = 6000,
};

enum unfold_mode { UNFOLD_NONE, UNFOLD, UNFOLD_SIMPLE, UNFOLD_ALL };

struct options {
	enum unfold_mode unfold;
	int semicolon, msig, sourcepos, dotted, clean, annotate;
	char *file; /* malloc'ed */
};

/* A growable string; oom is set, and further appends ignored, once an allocation fails. */
struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

/* The session: the map being written. Guarded by write_mon. */
struct session {
	int fd;
	int err; /* first errno of a write, or ENOMEM */
	struct options opt;
	struct sbuf out;  /* lines not yet written */
	struct sbuf name; /* scratch for one name */
};

/* Lines longer than this are cut: perf and jvmkit read lines of any length, but a name this long is
 * a runaway inlining chain, not information. */
#define MAX_NAME 16384
#define FLUSH_AT (64 * 1024)

static JavaVM *the_vm;
static jvmtiEnv *jvmti;
static jrawMonitorID session_mon; /* one session at a time */
static jrawMonitorID write_mon;   /* the session's file and buffers */
static int have_caps, have_callbacks;
static int init_lock;
static unsigned tmp_counter;
static char *onload_options; /* for the VMInit snapshot of Agent_OnLoad */
static struct session sess = {.fd = -1};

/* ---- strings ---- */

static void sb_reserve(struct sbuf *b, size_t extra)
{
	size_t want, cap;
	char *p;

	if (b->oom)
		return;
	want = b->len + extra + 1;
	if (want <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap *= 2;
	p = realloc(b->p, cap);
	if (p == NULL) {
		b->oom = 1;
		return;
	}
	b->p = p;
	b->cap = cap;
}

static void sb_addn(struct sbuf *b, const char *s, size_t n)
{
	sb_reserve(b, n);
	if (b->oom)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void sb_add(struct sbuf *b, const char *s)
{
	sb_addn(b, s, strlen(s));
}

static void sb_hex(struct sbuf *b, uint64_t v)
{
	char tmp[16];
	int n = 0;

	do {
		tmp[15 - n] = "0123456789abcdef"[v & 15];
		v >>= 4;
		n++;
	} while (v != 0);
	sb_addn(b, tmp + 16 - n, (size_t)n);
}

static void sb_dec(struct sbuf *b, int v)
{
	char tmp[12];
	int n = 0;
	unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;

	do {
		tmp[11 - n] = (char)('0' + u % 10);
		u /= 10;
		n++;
	} while (u != 0);
	if (v < 0)
		tmp[11 - n++] = '-';
	sb_addn(b, tmp + 12 - n, (size_t)n);
}

static void sb_free(struct sbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- options ---- */

static int word_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(s, word, n) == 0;
}

static int parse_options(const char *s, struct options *o)
{
	memset(o, 0, sizeof(*o));
	if (s == NULL)
		s = "";
	while (*s != 0) {
		const char *end = strchr(s, ',');
		size_t n = end ? (size_t)(end - s) : strlen(s);

		if (n >= 5 && memcmp(s, "file=", 5) == 0) {
			const char *path = s + 5;
			if (path[0] != '/' || strlen(path) >= 4096 || o->file != NULL)
				return RC_OPTIONS;
			o->file = strdup(path);
			if (o->file == NULL)
				return RC_NO_MEMORY;
			break;
		}
		if (n == 0)
			; /* "a,,b" */
		else if (word_is(s, n, "unfold"))
			o->unfold = o->unfold > UNFOLD ? o->unfold : UNFOLD;
		else if (word_is(s, n, "unfoldsimple"))
			o->unfold = o->unfold > UNFOLD_SIMPLE ? o->unfold : UNFOLD_SIMPLE;
		else if (word_is(s, n, "unfoldall"))
			o->unfold = UNFOLD_ALL;
		else if (word_is(s, n, "use_semicolon_unfold_delimiter"))
			o->semicolon = 1;
		else if (word_is(s, n, "msig"))
			o->msig = 1;
		else if (word_is(s, n, "sourcepos"))
			o->sourcepos = 1;
		else if (word_is(s, n, "dottedclass"))
			o->dotted = 1;
		else if (word_is(s, n, "cleanclass"))
			o->clean = 1;
		else if (word_is(s, n, "annotate_java_frames"))
			o->annotate = 1;
		else if (word_is(s, n, "debug_dump_unfold_entries"))
			;
		else
			return RC_OPTIONS;
		s += n;
		if (*s == ',')
			s++;
	}
	if (o->file == NULL) {
		struct sbuf b = {0};
		sb_add(&b, "/tmp/perf-");
		sb_dec(&b, (int)getpid());
		sb_add(&b, ".map");
		if (b.oom)
			return RC_NO_MEMORY;
		o->file = b.p;
	}
	return RC_OK;
}

/* ---- names ---- */

static JNIEnv *jni_env(void)
{
	JNIEnv *env = NULL;

	if (the_vm == NULL || (*the_vm)->GetEnv(the_vm, (void **)&env, JNI_VERSION_1_2) != JNI_OK)
		return NULL;
	return env;
}

static void add_class_name(struct sbuf *b, const char *sig, const struct options *o)
{
	size_t n = strlen(sig), i;

	if (o->clean && n >= 2 && sig[0] == 'L' && sig[n - 1] == ';') {
		sig++;
		n -= 2;
	}
	for (i = 0; i < n; i++) {
		char c = sig[i];
		if (o->dotted && c == '/')
			c = '.';
		sb_addn(b, &c, 1);
	}
}

/* The line of the bytecode with the lowest index in a line number table. */
static jint first_line(const jvmtiLineNumberEntry *t, jint n)
{
	jint i, best = 0;

	for (i = 1; i < n; i++)
		if (t[i].start_location < t[best].start_location)
			best = i;
	return t[best].line_number;
}

static void add_source_pos(jvmtiEnv *env, struct sbuf *b, jclass klass, jmethodID m)
{
	char *file = NULL;
	jvmtiLineNumberEntry *lines = NULL;
	jint nlines = 0;

	if ((*env)->GetSourceFileName(env, klass, &file) != JVMTI_ERROR_NONE || file == NULL)
		return;
	sb_add(b, "(");
	sb_add(b, file);
	if ((*env)->GetLineNumberTable(env, m, &nlines, &lines) == JVMTI_ERROR_NONE && lines != NULL) {
		if (nlines > 0) {
			sb_add(b, ":");
			sb_dec(b, first_line(lines, nlines));
		}
		(*env)->Deallocate(env, (unsigned char *)lines);
	}
	sb_add(b, ")");
	(*env)->Deallocate(env, (unsigned char *)file);
}

/* Appends the name of method m ("Lpkg/Class;::name" and what the options add, without annotation). */
static void add_method_name(jvmtiEnv *env, struct sbuf *b, jmethodID m, const struct options *o)
{
	char *name = NULL, *msig = NULL, *csig = NULL;
	jclass klass = NULL;
	JNIEnv *jni;

	if ((*env)->GetMethodName(env, m, &name, &msig, NULL) != JVMTI_ERROR_NONE) {
		sb_add(b, "<unknown method>");
		return;
	}
	if ((*env)->GetMethodDeclaringClass(env, m, &klass) == JVMTI_ERROR_NONE &&
	    (*env)->GetClassSignature(env, klass, &csig, NULL) == JVMTI_ERROR_NONE && csig != NULL) {
		add_class_name(b, csig, o);
	} else {
		sb_add(b, "<unknown class>");
	}
	sb_add(b, "::");
	sb_add(b, name != NULL ? name : "<unknown>");
	if (o->msig && msig != NULL)
		sb_add(b, msig);
	if (o->sourcepos && klass != NULL)
		add_source_pos(env, b, klass, m);
	if (csig != NULL)
		(*env)->Deallocate(env, (unsigned char *)csig);
	if (name != NULL)
		(*env)->Deallocate(env, (unsigned char *)name);
	if (msig != NULL)
		(*env)->Deallocate(env, (unsigned char *)msig);
	if (klass != NULL && (jni = jni_env()) != NULL)
		(*jni)->DeleteLocalRef(jni, klass);
}

/* ---- output (write_mon held) ---- */

static void flush_out(void)
{
	size_t off = 0;

	while (sess.err == 0 && off < sess.out.len) {
		ssize_t n = write(sess.fd, sess.out.p + off, sess.out.len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			sess.err = errno;
			break;
		}
		off += (size_t)n;
	}
	sess.out.len = 0;
}

static void emit(const void *start, jint size, const char *name)
{
	size_t n, i, at;

	if (sess.err != 0 || size <= 0)
		return;
	sb_hex(&sess.out, (uint64_t)(uintptr_t)start);
	sb_add(&sess.out, " ");
	sb_hex(&sess.out, (uint64_t)(uint32_t)size);
	sb_add(&sess.out, " ");
	at = sess.out.len;
	n = strlen(name);
	sb_addn(&sess.out, name, n < MAX_NAME ? n : MAX_NAME);
	sb_add(&sess.out, "\n");
	if (sess.out.oom) {
		sess.err = ENOMEM;
		return;
	}
	for (i = at; i + 1 < sess.out.len; i++)
		if (sess.out.p[i] == '\n' || sess.out.p[i] == '\r')
			sess.out.p[i] = ' ';
	if (sess.out.len >= FLUSH_AT)
		flush_out();
}

/* ---- callbacks ---- */

/* The inlining chain of a PcDesc, innermost method first; NULL or an empty one is the method's own code. */
static const jmethodID *chain(const PCStackInfo *pc, const jmethodID *root, jint *n)
{
	if (pc == NULL || pc->numstackframes <= 0 || pc->methods == NULL) {
		*n = 1;
		return root;
	}
	*n = pc->numstackframes;
	return pc->methods;
}

static int same_chain(const PCStackInfo *a, const PCStackInfo *b, jmethodID root, enum unfold_mode mode)
{
	jint na, nb, i;
	const jmethodID *ma = chain(a, &root, &na), *mb = chain(b, &root, &nb);

	if (mode != UNFOLD_ALL)
		return ma[0] == mb[0];
	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (ma[i] != mb[i])
			return 0;
	return 1;
}

/* Names the code whose scope is pc (NULL: the compiled method's own code) into sess.name. */
static void name_range(jvmtiEnv *env, const PCStackInfo *pc, jmethodID root)
{
	const struct options *o = &sess.opt;
	struct sbuf *b = &sess.name;
	jint n, i;
	const jmethodID *m = chain(pc, &root, &n);

	b->len = 0;
	if (o->unfold == UNFOLD_ALL) {
		for (i = n - 1; i >= 0 && b->len < MAX_NAME; i--) {
			add_method_name(env, b, m[i], o);
			if (o->annotate)
				sb_add(b, i == n - 1 ? "_[j]" : "_[i]");
			if (i > 0)
				sb_add(b, o->semicolon ? ";" : "->");
		}
		return;
	}
	if (m[0] == root) {
		add_method_name(env, b, root, o);
		if (o->annotate)
			sb_add(b, "_[j]");
		return;
	}
	add_method_name(env, b, m[0], o);
	if (o->unfold == UNFOLD) {
		sb_add(b, " in ");
		add_method_name(env, b, root, o);
	}
	if (o->annotate)
		sb_add(b, "_[i]");
}

static void emit_range(jvmtiEnv *env, const PCStackInfo *pc, jmethodID root, const char *from, const char *to)
{
	if (to <= from)
		return;
	name_range(env, pc, root);
	if (sess.name.oom) {
		sess.err = ENOMEM;
		return;
	}
	emit(from, (jint)(to - from), sess.name.p);
}

static const jvmtiCompiledMethodLoadInlineRecord *inline_record(const void *compile_info)
{
	const jvmtiCompiledMethodLoadRecordHeader *h = compile_info;

	for (; h != NULL; h = h->next)
		if (h->kind == JVMTI_CMLR_INLINE_INFO)
			return (const jvmtiCompiledMethodLoadInlineRecord *)h;
	return NULL;
}

/*
 * Code up to a PcDesc's pc belongs to that PcDesc's scope (the pc is where a call returns to, or just after
 * the instruction a non-safepoint PcDesc describes); code after the last one is the method's own.
 * Neighbouring pieces of one chain (unfoldall) or one top method (unfold, unfoldsimple) make one range.
 */
static void emit_unfolded(jvmtiEnv *env, jmethodID root, const char *code, const char *end,
			  const jvmtiCompiledMethodLoadInlineRecord *rec)
{
	const PCStackInfo *run = NULL;
	const char *run_start = code, *prev = code;
	int started = 0;
	jint i;

	for (i = 0; i < rec->numpcs && sess.err == 0; i++) {
		const PCStackInfo *pc = &rec->pcinfo[i];
		const char *at = pc->pc;

		if (at <= prev)
			continue;
		if (at > end)
			at = end;
		if (!started) {
			run = pc;
			started = 1;
		} else if (!same_chain(run, pc, root, sess.opt.unfold)) {
			emit_range(env, run, root, run_start, prev);
			run = pc;
			run_start = prev;
		}
		prev = at;
		if (at == end)
			break;
	}
	if (prev < end) {
		if (started && !same_chain(run, NULL, root, sess.opt.unfold)) {
			emit_range(env, run, root, run_start, prev);
			run_start = prev;
		}
		run = NULL;
		started = 1;
		prev = end;
	}
	if (started)
		emit_range(env, run, root, run_start, prev);
}

static void JNICALL on_compiled_method_load(jvmtiEnv *env, jmethodID method, jint code_size, const void *code_addr,
					    jint map_length, const jvmtiAddrLocationMap *map, const void *compile_info)
{
	const jvmtiCompiledMethodLoadInlineRecord *rec;

	(void)map_length;
	(void)map;
	if ((*env)->RawMonitorEnter(env, write_mon) != JVMTI_ERROR_NONE)
		return;
	if (sess.fd >= 0 && sess.err == 0 && code_size > 0) {
		rec = sess.opt.unfold != UNFOLD_NONE ? inline_record(compile_info) : NULL;
		if (rec != NULL && rec->numpcs > 0)
			emit_unfolded(env, method, code_addr, (const char *)code_addr + code_size, rec);
		else
			emit_range(env, NULL, method, code_addr, (const char *)code_addr + code_size);
	}
	(*env)->RawMonitorExit(env, write_mon);
}

static void JNICALL on_dynamic_code_generated(jvmtiEnv *env, const char *name, const void *address, jint length)
{
	if ((*env)->RawMonitorEnter(env, write_mon) != JVMTI_ERROR_NONE)
		return;
	if (sess.fd >= 0)
		emit(address, length, name != NULL ? name : "<unknown code>");
	(*env)->RawMonitorExit(env, write_mon);
}

static jint snapshot(const char *options);

static void JNICALL on_vm_init(jvmtiEnv *env, JNIEnv *jni, jthread thread)
{
	(void)jni;
	(void)thread;
	(*env)->SetEventNotificationMode(env, JVMTI_DISABLE, JVMTI_EVENT_VM_INIT, NULL);
	if (onload_options != NULL) {
		(void)snapshot(onload_options);
		free(onload_options);
		onload_options = NULL;
	}
}

/* ---- set-up ---- */

/* Makes the environment, monitors and callbacks once; retried on a later load after a failure. */
static jint setup(JavaVM *vm)
{
	jvmtiError e;
	jint rc = RC_OK;

	while (__atomic_test_and_set(&init_lock, __ATOMIC_ACQUIRE))
		sched_yield();
	if (the_vm == NULL)
		the_vm = vm;
	if (jvmti == NULL && (*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) {
		jvmti = NULL;
		rc = RC_NO_JVMTI;
		goto out;
	}
	if (!have_caps) {
		jvmtiCapabilities caps;
		memset(&caps, 0, sizeof(caps));
		caps.can_generate_compiled_method_load_events = 1;
		caps.can_get_source_file_name = 1;
		caps.can_get_line_numbers = 1;
		if ((e = (*jvmti)->AddCapabilities(jvmti, &caps)) != JVMTI_ERROR_NONE) {
			rc = RC_CAPABILITIES + (jint)e;
			goto out;
		}
		have_caps = 1;
	}
	if (session_mon == NULL && (e = (*jvmti)->CreateRawMonitor(jvmti, "jvmkit perfmap session", &session_mon)) != JVMTI_ERROR_NONE) {
		session_mon = NULL;
		rc = RC_SETUP + (jint)e;
		goto out;
	}
	if (write_mon == NULL && (e = (*jvmti)->CreateRawMonitor(jvmti, "jvmkit perfmap write", &write_mon)) != JVMTI_ERROR_NONE) {
		write_mon = NULL;
		rc = RC_SETUP + (jint)e;
		goto out;
	}
	if (!have_callbacks) {
		jvmtiEventCallbacks cb;
		memset(&cb, 0, sizeof(cb));
		cb.CompiledMethodLoad = on_compiled_method_load;
		cb.DynamicCodeGenerated = on_dynamic_code_generated;
		cb.VMInit = on_vm_init;
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

/* ---- the snapshot ---- */

/* Creates a temporary file next to path: "<dir>/.<base>.<pid>.<n>.<clock>.tmp". */
static int create_temp(const char *path, struct sbuf *tmp)
{
	const char *slash = strrchr(path, '/');
	int tries, fd;

	for (tries = 0; tries < 100; tries++) {
		struct timespec ts = {0, 0};
		clock_gettime(CLOCK_MONOTONIC, &ts);
		tmp->len = 0;
		sb_addn(tmp, path, (size_t)(slash - path) + 1);
		sb_add(tmp, ".");
		sb_add(tmp, slash + 1);
		sb_add(tmp, ".");
		sb_hex(tmp, (uint64_t)getpid());
		sb_add(tmp, ".");
		sb_hex(tmp, __atomic_add_fetch(&tmp_counter, 1, __ATOMIC_RELAXED));
		sb_add(tmp, ".");
		sb_hex(tmp, (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30));
		sb_add(tmp, ".tmp");
		if (tmp->oom) {
			errno = ENOMEM;
			return -1;
		}
		fd = open(tmp->p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

static jvmtiError set_events(jvmtiEventMode mode)
{
	jvmtiError e1 = (*jvmti)->SetEventNotificationMode(jvmti, mode, JVMTI_EVENT_COMPILED_METHOD_LOAD, NULL);
	jvmtiError e2 = (*jvmti)->SetEventNotificationMode(jvmti, mode, JVMTI_EVENT_DYNAMIC_CODE_GENERATED, NULL);
	return e1 != JVMTI_ERROR_NONE ? e1 : e2;
}

static jint snapshot(const char *options)
{
	struct options o;
	struct sbuf tmp = {0};
	jvmtiError e;
	jint rc;
	int fd, err;

	rc = parse_options(options, &o);
	if (rc != RC_OK) {
		free(o.file);
		return rc;
	}
	if ((*jvmti)->RawMonitorEnter(jvmti, session_mon) != JVMTI_ERROR_NONE) {
		free(o.file);
		return RC_SETUP + JVMTI_ERROR_INTERNAL;
	}
	fd = create_temp(o.file, &tmp);
	if (fd < 0) {
		rc = RC_CREATE + errno;
		goto out;
	}

	(*jvmti)->RawMonitorEnter(jvmti, write_mon);
	sess.opt = o;
	sess.err = 0;
	sess.fd = fd;
	(*jvmti)->RawMonitorExit(jvmti, write_mon);

	e = set_events(JVMTI_ENABLE);
	if (e == JVMTI_ERROR_NONE) {
		e = (*jvmti)->GenerateEvents(jvmti, JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
		if (e == JVMTI_ERROR_NONE)
			e = (*jvmti)->GenerateEvents(jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD);
		if (e != JVMTI_ERROR_NONE)
			rc = RC_GENERATE + (jint)e;
	} else {
		rc = RC_SETUP + (jint)e;
	}
	e = set_events(JVMTI_DISABLE);
	if (e != JVMTI_ERROR_NONE && rc == RC_OK)
		rc = RC_SETUP + (jint)e;

	/* From here on, a callback still running on another thread finds no file and returns. */
	(*jvmti)->RawMonitorEnter(jvmti, write_mon);
	flush_out();
	err = sess.err;
	sess.fd = -1;
	memset(&sess.opt, 0, sizeof(sess.opt));
	sb_free(&sess.out);
	sb_free(&sess.name);
	(*jvmti)->RawMonitorExit(jvmti, write_mon);

	if (close(fd) != 0 && err == 0)
		err = errno;
	if (rc == RC_OK && err != 0)
		rc = err == ENOMEM ? RC_NO_MEMORY : RC_WRITE + err;
	if (rc == RC_OK && rename(tmp.p, o.file) != 0)
		rc = RC_RENAME + errno;
	if (rc != RC_OK)
		unlink(tmp.p);
out:
	(*jvmti)->RawMonitorExit(jvmti, session_mon);
	sb_free(&tmp);
	free(o.file);
	return rc;
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
	jint rc;

	(void)reserved;
	rc = setup(vm);
	if (rc != RC_OK)
		return rc;
	return snapshot(options);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	struct options o;
	jvmtiError e;
	jint rc;

	(void)reserved;
	rc = parse_options(options, &o);
	free(o.file);
	if (rc != RC_OK)
		return rc;
	rc = setup(vm);
	if (rc != RC_OK)
		return rc;
	onload_options = strdup(options != NULL ? options : "");
	if (onload_options == NULL)
		return RC_NO_MEMORY;
	e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
	if (e != JVMTI_ERROR_NONE)
		return RC_SETUP + (jint)e;
	return RC_OK;
}
