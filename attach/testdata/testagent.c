/* A minimal JVMTI agent for the attach tests: Agent_OnAttach returns the number given as its
 * options (0 when empty), so a test can ask for success or a chosen failure code. */
#include <jvmti.h>
#include <stdlib.h>

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved) {
    (void)vm;
    (void)reserved;
    if (options == NULL || options[0] == '\0') {
        return 0;
    }
    return (jint)atoi(options);
}
