/* What the C tests of the library share: a check that counts failures, fixture files, and the check that
 * a call failed with a status and a one-line message. */
#ifndef KILN_TESTS_SDK_C_TEST_SUPPORT_H
#define KILN_TESTS_SDK_C_TEST_SUPPORT_H

#include <stdio.h>

#include "kiln/kiln.h"

extern int failures;
extern const kiln_api* api;
extern const char* fixture; /* the folder read_fixture reads from */

#define CHECK(condition)                                                            \
  do {                                                                              \
    if (!(condition)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

/* The bytes of `path` (malloc'd; exits when it cannot be read). */
void* read_whole_file(const char* path, size_t* size);

/* The bytes of the fixture's file `name`. */
void* read_fixture(const char* name, size_t* size);

/* Checks that `status` failed with `expected` and *error_slot (set by that call) carries a one-line
 * message containing `part`; frees the error. `line` is the caller's, for the failure message. */
void expect_error_at(int line, kiln_status status, kiln_error** error_slot, kiln_status expected,
                     const char* part);
#define expect_error(status, error_slot, expected, part) \
  expect_error_at(__LINE__, status, error_slot, expected, part)

#endif
