/* A program that links libkiln.so and nothing of OpenMP itself: run with OMP_DISPLAY_ENV=true, libgomp
   prints the wait policy it read when it was loaded, which the sdk.wait_policy tests check. */
#include <kiln/kiln.h>
#include <stdio.h>

int main(void) {
  const kiln_api* api = NULL;
  if (kiln_get_api(KILN_ABI_MAJOR, 0, &api) != KILN_OK) return 1;
  printf("kiln %s\n", api->version());
  return 0;
}
