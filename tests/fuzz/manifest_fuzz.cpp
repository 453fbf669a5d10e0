// A family's manifest.toml: strict TOML parsing, then validation against the known families.
#include "fuzz_input.h"
#include "manifest/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kiln::fuzz::expect_result_or_error([&] {
    const kiln::Manifest manifest = kiln::parse_manifest(kiln::fuzz::text(data, size), "manifest.toml");
    kiln::validate_manifest(manifest, {"timm_resnest", "timm_resnet", "timm_efficientnet", "yolov10"});
    (void)kiln::manifest_to_json(manifest).dump();
  });
  return 0;
}
