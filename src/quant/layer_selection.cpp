#include "quant/layer_selection.h"

#include <algorithm>

#include "core/error.h"

namespace kiln {
namespace {

const std::vector<std::string> kStem = {"conv1", "conv1.*", "conv_stem"};
const std::vector<std::string> kGates = {"*.fc1", "*.fc2", "*.se.*"};
const std::vector<std::string> kFirstStage = {"layer1.*"};

std::vector<std::string> joined(std::initializer_list<const std::vector<std::string>*> parts) {
  std::vector<std::string> all;
  for (const auto* part : parts) all.insert(all.end(), part->begin(), part->end());
  return all;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(separator, start), text.size());
    parts.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

bool matches_any(const std::vector<std::string>& patterns, std::string_view name) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& pattern) { return glob_match(pattern, name); });
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view name) {
  // Iterative matching with backtracking to the last '*': linear in practice, no recursion.
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<std::string_view> builtin_recipe_names() { return {"all", "nose", "nose-L1"}; }

bool is_builtin_recipe(std::string_view name) {
  const auto names = builtin_recipe_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

LayerRecipe parse_recipe(std::string_view text) {
  LayerRecipe recipe;
  recipe.name = std::string(text);
  if (text == "all") {
    recipe.exclude = kStem;
  } else if (text == "nose") {
    recipe.exclude = joined({&kStem, &kGates});
  } else if (text == "nose-L1") {
    recipe.exclude = joined({&kStem, &kGates, &kFirstStage});
  } else {
    require(!text.empty(), "recipe: expected all, nose, nose-L1, auto or include=PATTERNS;exclude=PATTERNS");
    recipe.user_patterns = true;
    for (const std::string& part : split(text, ';')) {
      const std::size_t equals = part.find('=');
      const std::string key = part.substr(0, equals);
      require(equals != std::string::npos && (key == "include" || key == "exclude"), "recipe '", text,
              "': expected all, nose, nose-L1, auto or include=P,P;exclude=P,P, got the part '", part, "'");
      auto& list = key == "include" ? recipe.include : recipe.exclude;
      for (const std::string& pattern : split(std::string_view(part).substr(equals + 1), ',')) {
        require(!pattern.empty(), "recipe '", text, "': empty pattern in '", part, "'");
        list.push_back(pattern);
      }
    }
  }
  return recipe;
}

std::vector<std::string> quantizable_layers(const Graph& graph) {
  std::vector<std::string> layers;
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    if (node.op != OpKind::kConv2d || is_quantized(node.precision) || node.inputs.size() < 2) continue;
    if (!graph.value(node.inputs[1]).is_constant()) continue;
    layers.push_back(node.name);
  }
  return layers;
}

std::vector<std::string> select_layers(const Graph& graph, const LayerRecipe& recipe) {
  const std::vector<std::string> candidates = quantizable_layers(graph);
  if (recipe.user_patterns) {
    for (const auto* list : {&recipe.include, &recipe.exclude}) {
      for (const std::string& pattern : *list) {
        const bool used = std::any_of(candidates.begin(), candidates.end(),
                                      [&](const std::string& name) { return glob_match(pattern, name); });
        require(used, "recipe '", recipe.name, "': pattern '", pattern, "' matches none of the ",
                candidates.size(), " convolutions (e.g. '", candidates.empty() ? "" : candidates.front(),
                "')");
      }
    }
  }
  std::vector<std::string> selected;
  for (const std::string& name : candidates) {
    const bool included = recipe.include.empty() || matches_any(recipe.include, name);
    if (included && !matches_any(recipe.exclude, name)) selected.push_back(name);
  }
  return selected;
}

}  // namespace kiln
