#include "c_test_support.h"

#include <stdlib.h>
#include <string.h>

int failures = 0;
const kiln_api* api = NULL;
const char* fixture = NULL;

void* read_whole_file(const char* path, size_t* size) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(file, 0, SEEK_END);
  *size = (size_t)ftell(file);
  fseek(file, 0, SEEK_SET);
  void* data = malloc(*size > 0 ? *size : 1);
  if (fread(data, 1, *size, file) != *size) exit(1);
  fclose(file);
  return data;
}

void* read_fixture(const char* name, size_t* size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", fixture, name);
  return read_whole_file(path, size);
}

void expect_error_at(int line, kiln_status status, kiln_error** error_slot, kiln_status expected,
                     const char* part) {
  kiln_error* error = *error_slot;
  *error_slot = NULL;
  if (status != expected) {
    fprintf(stderr, "line %d: status %s, expected %s (%s)\n", line, kiln_status_name(status),
            kiln_status_name(expected), error ? api->error_message(error) : "no error object");
    ++failures;
  }
  if (error == NULL) {
    fprintf(stderr, "line %d: no error object\n", line);
    ++failures;
    return;
  }
  CHECK(api->error_status(error) == expected);
  const char* message = api->error_message(error);
  if (strstr(message, part) == NULL) {
    fprintf(stderr, "line %d: message '%s' lacks '%s'\n", line, message, part);
    ++failures;
  }
  if (strchr(message, '\n') != NULL) {
    fprintf(stderr, "line %d: message '%s' is more than one line\n", line, message);
    ++failures;
  }
  api->error_free(error);
}
