/* The sandbox ("pause") container of the test node's pods: holds the pod's namespaces, reaps
 * orphaned children, exits on SIGINT or SIGTERM. Built statically by node.py. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int signal_number) {
  (void)signal_number;
  _exit(0);
}

static void reap(int signal_number) {
  (void)signal_number;
  while (waitpid(-1, 0, WNOHANG) > 0) {
  }
}

int main(void) {
  signal(SIGINT, stop);
  signal(SIGTERM, stop);
  signal(SIGCHLD, reap);
  for (;;) pause();
}
