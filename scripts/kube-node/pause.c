/* The pod sandbox's process (containerd's sandbox_image): holds the pod's
 * namespaces, reaps the zombies of a shared PID namespace, and exits on
 * SIGINT/SIGTERM. Built static by scripts/kube-test-cluster.sh into the pause image,
 * since no registry can be pulled from here. Written for this project after
 * the behaviour of Kubernetes' build/pause. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) {
    (void)sig;
    _exit(0);
}

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction term = {.sa_handler = quit};
    struct sigaction child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
    if (sigaction(SIGINT, &term, NULL) < 0 || sigaction(SIGTERM, &term, NULL) < 0 ||
        sigaction(SIGCHLD, &child, NULL) < 0) {
        return 1;
    }
    for (;;) {
        pause();
    }
    return 0;
}
