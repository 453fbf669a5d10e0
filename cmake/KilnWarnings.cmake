add_library(kiln_warnings INTERFACE)
target_compile_options(kiln_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
  -Wno-sign-conversion -Wnon-virtual-dtor -Wimplicit-fallthrough)
if(KILN_WERROR)
  target_compile_options(kiln_warnings INTERFACE -Werror)
endif()
if(KILN_SANITIZE)
  # GCC's -Wmaybe-uninitialized is unreliable under -fsanitize (the instrumentation confuses its flow
  # analysis; g++ 12 flags std::regex internals), so it is not an error in sanitizer builds.
  target_compile_options(kiln_warnings INTERFACE -fsanitize=address,undefined -fno-sanitize-recover=all
    -fno-omit-frame-pointer $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
  target_link_options(kiln_warnings INTERFACE -fsanitize=address,undefined)
endif()
