/* OpenMP threads that wait at a barrier spin by default (libgomp: 300,000 iterations, a few
   milliseconds), which on a machine with other work takes the cores the other threads need: batch-1
   runs of a small network on a shared two-core machine slowed by one to three orders of magnitude
   (docs/log/PERFORMANCE_LOG.md). kiln's CPU threads wait passively (they sleep at once) unless the user chose
   otherwise with OpenMP's own variables, OMP_WAIT_POLICY or libgomp's GOMP_SPINCOUNT.

   libgomp reads those variables once, in its load-time constructor, so setting them from main() or
   from an engine is too late, and so is an executable's .preinit_array (glibc's own initialization,
   which runs after it, resets the environment to the one the process started with). libkiln_waits.so
   sets OMP_WAIT_POLICY=passive in a constructor of its own. It depends on libc alone, and libkiln.so
   names it after libgomp among its dependencies: glibc initializes a library's dependencies before it
   and, of two unrelated libraries, the one loaded later first, so the constructor runs after libc's and
   before libgomp's, in the kiln program and in any program linking libkiln.so (the sdk.wait_policy and
   everyday_cli tests check it). A program that loads libgomp before libkiln.so (dlopen after another
   OpenMP library) keeps libgomp's default. The Python module, which links kiln statically, sets the
   variable in kiln/__init__.py before it loads its extension. */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

/* Sets OMP_WAIT_POLICY=passive when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set. Affects the
   OpenMP runtime only before it is loaded, and the processes this one starts. */
__attribute__((visibility("default"))) void kiln_prefer_passive_waits(void);

#ifdef __cplusplus
}
#endif
