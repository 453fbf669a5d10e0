// Which layers run in FP8. A recipe names a set of convolutions: a built-in one ("all", "nose",
// "nose-L1") or patterns over layer names ("include=layer3.*,layer4.*;exclude=*.fc1"). The built-ins
// are the selections the timm families' studies use:
//   all      every convolution except the stem (conv1, conv1.*, conv_stem): 84 of ResNeSt-50d's 87
//   nose     all, and also the attention gates (*.fc1, *.fc2, *.se.*) kept out: 52 on ResNeSt-50d
//   nose-L1  nose, and also the first stage (layer1.*) kept out: 42 on ResNeSt-50d
// The classifier is a linear layer and is never selected. "auto" is not a pattern: it is searched for
// with data (quant/auto_recipe.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace kiln {

struct LayerRecipe {
  std::string name;                  // the built-in name, or the pattern text as given
  std::vector<std::string> include;  // empty: every quantizable layer
  std::vector<std::string> exclude;
  bool user_patterns = false;  // a pattern that matches no layer is then an error (a typo)
};

// Glob over layer names: '*' matches any run of characters (dots included), '?' one character.
bool glob_match(std::string_view pattern, std::string_view name);

std::vector<std::string_view> builtin_recipe_names();
bool is_builtin_recipe(std::string_view name);

// A built-in name or "include=P,P;exclude=P,P" (either part may be left out). Fails naming the text.
LayerRecipe parse_recipe(std::string_view text);

// Convolutions with a constant weight that are not already FP8, in execution order.
std::vector<std::string> quantizable_layers(const Graph& graph);

// The quantizable layers the recipe selects, in execution order.
std::vector<std::string> select_layers(const Graph& graph, const LayerRecipe& recipe);

}  // namespace kiln
