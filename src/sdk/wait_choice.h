/* How kiln's OpenMP threads run, chosen once when the process starts from the work then ready to run on
   the machine (docs/log/PERFORMANCE_LOG.md has the measurements behind it).

   Spinning waits keep a small network's batch-1 run fast on an idle machine (about 4x faster than
   sleeping ones for the demo plan: each of its some 70 parallel regions a run would otherwise wake a
   sleeping thread), but beside other work a spinning thread holds a core that work needs, and the team
   waits at every barrier for a thread the scheduler preempted: 10x to 1000x slower. No fixed spin count
   gives both (3000 and 10000 spins collapse under load too). A thread that sleeps at once still waits for
   a preempted teammate, so on a busy machine the team takes only the cores the other work leaves free
   (at least one): a team of one waits at no barrier.

   The decision is a pure function of what was read, so a test pins its table; wait_policy.c reads the
   machine and applies it before libgomp reads its variables. */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

enum kiln_waits {
  KILN_WAITS_USER = 0,   /* the user set OMP_WAIT_POLICY, GOMP_SPINCOUNT or OMP_NUM_THREADS: kept */
  KILN_WAITS_SPIN = 1,   /* libgomp's default: spin a while (300,000 iterations), then sleep */
  KILN_WAITS_PASSIVE = 2 /* sleep at once: OMP_WAIT_POLICY=passive */
};

/* What the machine was doing when the process started. */
struct kiln_machine_work {
  int cores;           /* hardware threads this process may run on; 0 or less: unknown */
  int runnable_others; /* most tasks ready to run besides this one over the samples; negative: unknown */
  double load_average; /* the 1-minute load average; negative: unknown */
};

struct kiln_wait_choice {
  enum kiln_waits waits;
  int threads; /* the team: 0 leaves OpenMP's default (one per core, or the user's OMP_NUM_THREADS) */
};

/* The table: the user's choice wins; the other work is the tasks ready to run besides this one or, where
   more, the whole part of the 1-minute load average (the last minute's work, which instant samples miss
   between short jobs); with none, spin with one thread per core; with some, sleep at once with one thread
   per core it leaves free (at least one); where the machine could not be read, sleep with OpenMP's
   default team. */
struct kiln_wait_choice kiln_choose_waits(int user_chose, struct kiln_machine_work work);

#ifdef __cplusplus
}
#endif
