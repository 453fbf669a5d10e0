add_library(kiln_warnings INTERFACE)
target_compile_options(kiln_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
  -Wno-sign-conversion -Wnon-virtual-dtor -Wimplicit-fallthrough)
if(KILN_WERROR)
  target_compile_options(kiln_warnings INTERFACE -Werror)
endif()
if(KILN_SANITIZE)
  target_compile_options(kiln_warnings INTERFACE -fsanitize=address,undefined -fno-sanitize-recover=all
    -fno-omit-frame-pointer)
  target_link_options(kiln_warnings INTERFACE -fsanitize=address,undefined)
endif()
