#define _GNU_SOURCE
#include "sdk/wait_policy.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "sdk/wait_choice.h"

/* The choice made at load, in words, for the records of bench and study; empty until it is made. */
static char chosen_text[256];

/* The 1-minute load average and the runnable tasks, this one included, from /proc/loadavg
   ("0.52 0.58 0.59 3/120 4242"); returns 0 where it cannot be read. */
static int read_loadavg(double* load_average, int* runnable) {
  char text[128];
  const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t bytes = read(fd, text, sizeof text - 1);
  close(fd);
  if (bytes <= 0) return 0;
  text[bytes] = '\0';
  double five = 0.0, fifteen = 0.0;
  int total = 0;
  return sscanf(text, "%lf %lf %lf %d/%d", load_average, &five, &fifteen, runnable, &total) == 5;
}

/* The machine's work now. A task runnable at one instant may be a short one (a shell, a daemon), but
   one ready in any of a few samples a millisecond apart is counted: spinning beside other work costs
   far more than sleeping on an idle machine. /proc/loadavg counts the whole machine's tasks, so in a
   container limited to some of a host's cores the host's other work counts too (and waits sleep). */
static struct kiln_machine_work read_machine_work(void) {
  struct kiln_machine_work work = {0, -1, -1.0};
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) work.cores = CPU_COUNT(&cpus);
  enum { kSamples = 4 };
  for (int i = 0; i < kSamples; ++i) {
    double load_average = 0.0;
    int runnable = 0;
    if (!read_loadavg(&load_average, &runnable)) return (struct kiln_machine_work){work.cores, -1, -1.0};
    if (i == 0) work.load_average = load_average;
    /* At load this process has one thread, the one running this code. */
    if (runnable - 1 > work.runnable_others) work.runnable_others = runnable - 1;
    if (i + 1 < kSamples) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  return work;
}

/* "sleep at once, 1 thread (OMP_WAIT_POLICY=passive OMP_NUM_THREADS=1), chosen at start: 2 other tasks
   ready to run on 2 cores, 1-minute load average 1.93". */
static void record_choice(struct kiln_wait_choice choice, struct kiln_machine_work work) {
  char what[128];
  if (choice.waits == KILN_WAITS_SPIN) {
    snprintf(what, sizeof what, "spin, then sleep (libgomp's default), one thread per core");
  } else if (choice.threads > 0) {
    snprintf(what, sizeof what, "sleep at once, %d thread%s (OMP_WAIT_POLICY=passive OMP_NUM_THREADS=%d)",
             choice.threads, choice.threads == 1 ? "" : "s", choice.threads);
  } else {
    snprintf(what, sizeof what, "sleep at once (OMP_WAIT_POLICY=passive)");
  }
  if (work.cores <= 0 || work.runnable_others < 0 || work.load_average < 0.0) {
    snprintf(chosen_text, sizeof chosen_text, "%s, chosen at start: the machine's work could not be read",
             what);
    return;
  }
  snprintf(chosen_text, sizeof chosen_text,
           "%s, chosen at start: %d other task%s ready to run on %d core%s, 1-minute load average %.2f", what,
           work.runnable_others, work.runnable_others == 1 ? "" : "s", work.cores, work.cores == 1 ? "" : "s",
           work.load_average);
}

/* The user's own settings, named as they were given. */
static void record_users(void) {
  static const char* const names[] = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS"};
  size_t used = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    const char* value = getenv(names[i]);
    if (value == NULL || used >= sizeof chosen_text) continue;
    used += (size_t)snprintf(chosen_text + used, sizeof chosen_text - used, "%s%s=%s", used ? " " : "",
                             names[i], value);
  }
  if (used < sizeof chosen_text)
    snprintf(chosen_text + used, sizeof chosen_text - used, " (the user's choice)");
}

void kiln_choose_waits_at_start(void) {
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || getenv("OMP_NUM_THREADS")) {
    record_users();
    return;
  }
  const struct kiln_machine_work work = read_machine_work();
  const struct kiln_wait_choice choice = kiln_choose_waits(0, work);
  /* Spinning is libgomp's own default: nothing is set, and the processes this one starts choose for
     themselves. */
  if (choice.waits == KILN_WAITS_PASSIVE) setenv("OMP_WAIT_POLICY", "passive", 0);
  if (choice.threads > 0) {
    char threads[16];
    snprintf(threads, sizeof threads, "%d", choice.threads);
    setenv("OMP_NUM_THREADS", threads, 0);
  }
  record_choice(choice, work);
}

const char* kiln_wait_choice(void) { return chosen_text; }

/* Runs when the library is loaded, after libc's own initialization (which resets the environment to
   the one the process started with, so nothing earlier can set it) and before libgomp's. */
__attribute__((constructor)) static void choose_waits_at_load(void) { kiln_choose_waits_at_start(); }
