/* The one program of the kubelet tier's local image (tests/kubelet_tier/runtime.py builds it with
 * `gcc -static` and packs it as a one-layer OCI image; nothing is pulled from a registry).
 *
 *   /pause                 sleep until SIGTERM/SIGINT, then exit 0 (the pod sandbox, a long-running container)
 *   /pause -exit N         exit with status N at once (init containers, jobs)
 *   /pause -sleep S        sleep S seconds, then exit 0 (with -exit N: then exit N)
 *   /pause -ignore-term    sleep and ignore SIGTERM: only the kubelet's SIGKILL after the grace period ends it
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_term(int sig) { (void)sig; _exit(0); }

int main(int argc, char **argv) {
    int ignore = 0, finish = 0, code = 0, seconds = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-exit") == 0 && i + 1 < argc) { finish = 1; code = atoi(argv[++i]); }
        else if (strcmp(argv[i], "-sleep") == 0 && i + 1 < argc) { finish = 1; seconds = atoi(argv[++i]); }
        else if (strcmp(argv[i], "-ignore-term") == 0) ignore = 1;
    }
    if (finish) {
        if (seconds > 0) sleep((unsigned)seconds);
        return code;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ignore ? SIG_IGN : on_term;
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_term;
    sigaction(SIGINT, &sa, NULL);
    for (;;) pause();
}
