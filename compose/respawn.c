/* respawn: PID 1 of a lockharness node container, `respawn PROGRAM [ARGS...]`.
 *
 * The nemesis kills and restarts the redis-server, not its container (as Jepsen does on a
 * machine): starting a stopped container took 0.5-0.8 s on a loaded machine, a process
 * starts in milliseconds. So this stays up while its child is dead:
 *   SIGCHLD          reap; never restart on its own (a killed node stays down until told)
 *   SIGUSR1          start the child again, unless it runs
 *   SIGTERM, SIGINT  forward SIGTERM to the child, wait for it, exit 0 (`compose down`)
 * The signals are blocked and taken with sigwaitinfo: no handler races, and a blocked
 * signal reaches a namespace's PID 1 (one left at SIG_DFL would be dropped).
 * Built static (the image holds no libc for it), so LD_PRELOAD (the clock shim) does not
 * apply here; it passes through execv's environment to the child.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static sigset_t taken;
static pid_t child = 0; /* 0: not running */

static void reap(void) {
    int status;
    pid_t pid;
    /* Any pid: as PID 1 we also inherit the orphans of a killed child (redis's forks). */
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid != child)
            continue;
        child = 0;
        if (WIFSIGNALED(status))
            fprintf(stderr, "respawn: child %d killed by signal %d\n", pid, WTERMSIG(status));
        else
            fprintf(stderr, "respawn: child %d exited %d\n", pid, WEXITSTATUS(status));
    }
}

static void start(char **argv) {
    reap(); /* a SIGUSR1 may be taken before the SIGCHLD of the death it follows */
    if (child > 0)
        return;
    pid_t pid = fork();
    if (pid < 0) {
        perror("respawn: fork");
        return;
    }
    if (pid == 0) {
        sigprocmask(SIG_UNBLOCK, &taken, NULL); /* the server handles its own signals */
        execv(argv[0], argv);
        fprintf(stderr, "respawn: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    child = pid;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: respawn PROGRAM [ARGS...]\n");
        return 2;
    }
    sigemptyset(&taken);
    sigaddset(&taken, SIGCHLD);
    sigaddset(&taken, SIGUSR1);
    sigaddset(&taken, SIGTERM);
    sigaddset(&taken, SIGINT);
    sigprocmask(SIG_BLOCK, &taken, NULL);
    start(argv + 1);
    for (;;) {
        int sig = sigwaitinfo(&taken, NULL);
        if (sig == SIGCHLD) {
            reap();
        } else if (sig == SIGUSR1) {
            start(argv + 1);
        } else if (sig == SIGTERM || sig == SIGINT) {
            reap();
            if (child > 0) {
                kill(child, SIGTERM);
                while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
                    ;
            }
            return 0;
        }
    }
}
