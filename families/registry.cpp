#include "families/registry.h"

#include "core/error.h"

namespace kiln {

const std::vector<FamilyInfo>& families() {
  static const std::vector<FamilyInfo> kFamilies = {};
  return kFamilies;
}

const FamilyInfo& find_family(std::string_view name) {
  std::string known;
  for (const auto& family : families()) {
    if (family.name == name) return family;
    known += known.empty() ? "" : ", ";
    known += family.name;
  }
  fail("unknown family '", name, "' (known: ", known, ")");
}

}  // namespace kiln
