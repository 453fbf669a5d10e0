/* The examples' one helper: a whole file in memory (malloc'd; NULL when it cannot be read). */
#ifndef KILN_EXAMPLES_READ_FILE_H
#define KILN_EXAMPLES_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

static unsigned char* read_file(const char* path, size_t* size) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) return NULL;
  fseek(file, 0, SEEK_END);
  *size = (size_t)ftell(file);
  fseek(file, 0, SEEK_SET);
  unsigned char* bytes = malloc(*size);
  if (bytes != NULL && fread(bytes, 1, *size, file) != *size) {
    free(bytes);
    bytes = NULL;
  }
  fclose(file);
  return bytes;
}

#endif
