#include "sdk/wait_choice.h"

struct kiln_wait_choice kiln_choose_waits(int user_chose, struct kiln_machine_work work) {
  const struct kiln_wait_choice users = {KILN_WAITS_USER, 0}, unknown = {KILN_WAITS_PASSIVE, 0};
  if (user_chose) return users;
  if (work.cores <= 0 || work.runnable_others < 0 || work.load_average < 0.0) return unknown;
  /* Other work is what is ready to run now or, where more, what kept cores busy over the last minute (a
     load of 1.7 is one core's worth): work between short jobs, which the instant samples miss, returns. */
  const int recent = (int)work.load_average;
  const int others = work.runnable_others > recent ? work.runnable_others : recent;
  if (others == 0) return (struct kiln_wait_choice){KILN_WAITS_SPIN, 0};
  /* Each other task takes a core; a team thread sharing it would hold up the rest of the team at every
     barrier. */
  const int free_cores = work.cores - others;
  return (struct kiln_wait_choice){KILN_WAITS_PASSIVE, free_cores >= 1 ? free_cores : 1};
}
