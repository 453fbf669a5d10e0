#include "sdk/wait_policy.h"

#include <stdlib.h>

void kiln_prefer_passive_waits(void) {
  /* A user who set either variable chose how OpenMP waits; kiln keeps that choice. */
  if (getenv("OMP_WAIT_POLICY") != NULL || getenv("GOMP_SPINCOUNT") != NULL) return;
  setenv("OMP_WAIT_POLICY", "passive", 0);
}

/* Runs when the library is loaded, after libc's own initialization (which resets the environment to
   the one the process started with, so nothing earlier can set it) and before libgomp's. */
__attribute__((constructor)) static void prefer_passive_waits_at_load(void) { kiln_prefer_passive_waits(); }
