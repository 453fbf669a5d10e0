/* OpenMP threads that wait at a barrier spin by default (libgomp: 300,000 iterations, a few
   milliseconds), which on a machine with other work takes the cores the other threads need: batch-1
   runs of a small network on a shared two-core machine slowed by one to three orders of magnitude,
   while on an idle machine spinning runs them about 4x faster than sleeping (docs/log/PERFORMANCE_LOG.md).
   kiln chooses once, when the process starts, from the work then ready to run on the machine
   (wait_choice.h has the table): spin with one thread per core on an idle machine; on a busy one sleep
   at once with a thread per core the other work leaves free (OMP_NUM_THREADS), unless the user chose with
   OpenMP's own variables, OMP_WAIT_POLICY, libgomp's GOMP_SPINCOUNT or OMP_NUM_THREADS.

   libgomp reads those variables once, in its load-time constructor, so setting them from main() or
   from an engine is too late, and so is an executable's .preinit_array (glibc's own initialization,
   which runs after it, resets the environment to the one the process started with). libkiln_waits.so
   makes the choice in a constructor of its own. It depends on libc alone, and libkiln.so
   names it after libgomp among its dependencies: glibc initializes a library's dependencies before it
   and, of two unrelated libraries, the one loaded later first, so the constructor runs after libc's and
   before libgomp's, in the kiln program and in any program linking libkiln.so (the sdk.wait_policy and
   everyday_cli tests check it). A program that loads libgomp before libkiln.so (dlopen after another
   OpenMP library) keeps libgomp's default. The Python module, which links libkiln_core.so and not
   libkiln.so, sets passive waits in kiln/__init__.py before it loads its extension: an interpreter lives long past any
   reading of the machine at its start. */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

/* Chooses how OpenMP threads wait and how many run (wait_choice.h) and sets OMP_WAIT_POLICY=passive and
   OMP_NUM_THREADS where the choice is to sleep; leaves a user's OMP_WAIT_POLICY, GOMP_SPINCOUNT or
   OMP_NUM_THREADS as they are. Affects the OpenMP runtime only
   before it is loaded, and the processes this one starts. */
__attribute__((visibility("default"))) void kiln_choose_waits_at_start(void);

/* The choice made when the library was loaded, in words (what, and the machine's work it was made
   from), for the records of `kiln bench` and `kiln study`; found by name (dlsym) by the CPU backend,
   which is also linked into programs without this library. */
__attribute__((visibility("default"))) const char* kiln_wait_choice(void);

#ifdef __cplusplus
}
#endif
